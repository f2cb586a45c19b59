#include "audit/query.hpp"

#include <fmt/format.h>

#include <charconv>

#include "audit/decision_record.hpp"
#include "audit/encoding.hpp"
#include "audit/run_fields.hpp"
#include "audit/run_record.hpp"
#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

constexpr FilterSpec k_filter_specs[] = {
    {"since", "TIME",
     "only from TIME on: ISO-8601 (2024-05-01T12:00Z; UTC unless an offset is given) or an age "
     "(2h, 7d)",
     FilterKind::since, "start_ms", "time_ms"},
    {"until", "TIME", "only before TIME (same forms as --since)", FilterKind::until, "start_ms",
     "time_ms"},
    {"status", "LIST", "only these statuses, comma-separated (ok,error,timeout,...)",
     FilterKind::status_list, "status", ""},
    {"decision", "LIST", "only these decisions, comma-separated (allow,deny,ask,rewrite)",
     FilterKind::decision_list, "", "decision"},
    {"command", "NAME", "only runs invoked as NAME (python, node, sh; globs like py* work)",
     FilterKind::glob, "invoked_as", ""},
    {"image", "IMAGE", "only runs in IMAGE (globs like python:* work)", FilterKind::glob, "image",
     ""},
    {"exit-code", "N", "only runs that exited with N", FilterKind::integer, "exit_code", ""},
    {"agent", "NAME", "only this agent (claude-code, codex, cursor, gemini-cli, ...; globs work)",
     FilterKind::glob, "agent", "agent"},
    {"session", "ID", "only this agent session", FilterKind::exact, "agent_session", "session_id"},
    {"tool-use", "ID", "only this tool call (links runs and hook decisions)", FilterKind::exact,
     "tool_use_id", "tool_use_id"},
    {"cwd", "DIR", "only what ran in DIR or below it", FilterKind::path_prefix, "cwd", "cwd"},
    {"host", "NAME", "only runs on this host (the host field; a merged fleet export holds many)",
     FilterKind::exact, "host", ""},
};

[[noreturn]] void bad_value(const FilterSpec& spec, const std::string& value,
                            const std::string& expected) {
  throw Fatal("bad value " + quoted(value) + " for --" + std::string(spec.option) + ": expected " +
                  expected,
              exit_code::k_usage);
}

// Splits a comma-separated list and checks each name against the allowed ones.
std::vector<SqlValue> checked_names(const FilterSpec& spec, const std::string& value,
                                    const std::vector<std::string>& allowed) {
  std::vector<SqlValue> names;
  for (const auto& name : split_words(value)) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      bad_value(spec, name, "one of " + join(allowed, ", "));
    }
    names.emplace_back(name);
  }
  if (names.empty()) {
    bad_value(spec, value, "one of " + join(allowed, ", "));
  }
  return names;
}

std::string placeholders(size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    text += i == 0 ? "?" : ", ?";
  }
  return text;
}

int64_t parse_integer(const FilterSpec& spec, const std::string& value) {
  int64_t number = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size()) {
    bad_value(spec, value, "an integer");
  }
  return number;
}

// `cwd` equals DIR or lies below it, compared byte for byte.
void add_path_prefix(Filter& filter, const std::string& column, std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') {
    dir.pop_back();
  }
  if (dir == "/") {
    return;
  }
  filter.columns.insert(column);
  filter.where +=
      " AND (" + column + " = ? OR substr(CAST(" + column + " AS BLOB), 1, ?) = CAST(? AS BLOB))";
  filter.params.insert(filter.params.end(),
                       {dir, static_cast<int64_t>(dir.size() + 1), Blob{dir + "/"}});
}

void add_condition(Filter& filter, const FilterSpec& spec, const std::string& column,
                   const std::string& value, int64_t now_ms) {
  auto add = [&](const std::string& clause, std::vector<SqlValue> params) {
    filter.columns.insert(column);
    filter.where += " AND " + clause;
    filter.params.insert(filter.params.end(), params.begin(), params.end());
  };
  switch (spec.kind) {
    case FilterKind::since:
      return add(column + " >= ?", {parse_time_spec(value, now_ms, spec.option)});
    case FilterKind::until:
      return add(column + " < ?", {parse_time_spec(value, now_ms, spec.option)});
    case FilterKind::status_list: {
      auto names = checked_names(spec, value, run_status_names());
      return add(column + " IN (" + placeholders(names.size()) + ")", names);
    }
    case FilterKind::decision_list: {
      auto names = checked_names(spec, value, decision_names());
      return add(column + " IN (" + placeholders(names.size()) + ")", names);
    }
    case FilterKind::glob:
      return add(column + " GLOB ?", {value});
    case FilterKind::exact:  // `!= ''` lets SQLite use the partial tool_use_id indexes
      return add("(" + column + " = ? AND " + column + " != '')", {value});
    case FilterKind::integer:
      return add(column + " = ?", {parse_integer(spec, value)});
    case FilterKind::path_prefix:
      return add_path_prefix(filter, column, value);
  }
}

}  // namespace

std::span<const FilterSpec> filter_specs() {
  return k_filter_specs;
}

bool Filter::reads_only(std::initializer_list<std::string_view> available) const {
  return std::all_of(columns.begin(), columns.end(), [&](const std::string& column) {
    return std::find(available.begin(), available.end(), column) != available.end();
  });
}

std::string_view filter_column(const FilterSpec& spec, Subject subject) {
  return subject == Subject::runs ? spec.run_column : spec.decision_column;
}

Statement prepare_with_filter(Database& db, const std::string& sql, const Filter& filter,
                              std::string_view action) {
  Statement statement(db, sql, action);
  int index = 0;
  for (const auto& param : filter.params) {
    statement.bind(++index, param);
  }
  return statement;
}

Filter build_filter(Subject subject, const std::map<std::string, std::string>& values,
                    int64_t now_ms) {
  Filter filter;
  for (const auto& spec : k_filter_specs) {
    auto value = values.find(std::string(spec.option));
    std::string column(filter_column(spec, subject));
    if (value != values.end() && !column.empty()) {
      add_condition(filter, spec, column, value->second, now_ms);
    }
  }
  return filter;
}

namespace {

// One output field: its stable name, the SQL that reads it and how it is presented.
struct OutputField {
  std::string_view field;
  std::string_view sql;
  Present present = Present::plain;
};

// The run fields in output order, from the field table.
constexpr auto k_run_output = [] {
  std::array<OutputField, std::size(k_run_fields)> output{};
  for (size_t i = 0; i < output.size(); ++i) {
    output[i] = OutputField{k_run_fields[i].name, k_run_fields[i].column, k_run_fields[i].present};
  }
  return output;
}();

constexpr OutputField k_decision_output[] = {
    {"decision_id", "decision_id"},
    {"time", "time_ms", Present::iso_time},
    {"time_ms", "time_ms"},
    {"agent", "agent"},
    {"event", "event"},
    {"session_id", "session_id"},
    {"tool_use_id", "tool_use_id"},
    {"cwd", "cwd"},
    {"original_command", "original_command"},
    {"rewritten_command", "rewritten_command"},
    {"decision", "decision"},
    {"answer", "answer"},
    {"permission_mode", "permission_mode"},
    {"reason", "reason"},
    {"rule", "rule"},
    {"payload_bytes", "payload_bytes"},
    {"outcome", "outcome"},
    {"exit_code", "exit_code"},
    {"completed", "completed_ms", Present::iso_time},
    {"completed_ms", "completed_ms"},
    {"tool_response_tail", "tool_response_tail"},
    {"uid", "uid"},
    {"chain_seq", "chain_seq"},
    {"prev_hash", "prev_hash"},
    {"row_hash", "row_hash"},
};

constexpr OutputField k_connection_output[] = {
    {"run_id", "run_id"},
    {"start", "start_ms", Present::iso_time},
    {"start_ms", "start_ms"},
    {"method", "method"},
    {"name", "name"},
    {"port", "port"},
    {"address", "address"},
    {"verdict", "verdict"},
    {"reason", "reason"},
    {"bytes_up", "bytes_up"},
    {"bytes_down", "bytes_down"},
    {"duration_ms", "duration_ms"},
};

std::vector<std::string> field_names(std::span<const OutputField> fields) {
  std::vector<std::string> names;
  for (const auto& field : fields) {
    names.emplace_back(field.field);
  }
  return names;
}

std::string select_list(std::span<const OutputField> fields) {
  std::vector<std::string> expressions;
  for (const auto& field : fields) {
    expressions.emplace_back(field.sql);
  }
  return join(expressions, ", ");
}

nlohmann::ordered_json plain_value(const SqlValue& value) {
  if (const auto* number = std::get_if<int64_t>(&value)) {
    return *number;
  }
  if (const auto* real = std::get_if<double>(&value)) {
    return *real;
  }
  if (const auto* text = std::get_if<std::string>(&value)) {
    return *text;
  }
  if (const auto* blob = std::get_if<Blob>(&value)) {
    return blob->bytes;
  }
  return nullptr;
}

// Null when every argument is valid UTF-8 (then `argv` is exact), else each argument in hex.
nlohmann::ordered_json hex_if_invalid(const std::string& packed) {
  auto args = unpack_args(packed);
  if (std::all_of(args.begin(), args.end(), [](const auto& arg) { return is_valid_utf8(arg); })) {
    return nullptr;
  }
  auto hex = nlohmann::ordered_json::array();
  for (const auto& arg : args) {
    hex.push_back(hex_encode(arg));
  }
  return hex;
}

nlohmann::ordered_json present(const SqlValue& value, Present how) {
  if (std::holds_alternative<std::monostate>(value)) {
    return nullptr;
  }
  auto plain = plain_value(value);
  switch (how) {
    case Present::json_text:
      return nlohmann::ordered_json::parse(plain.get<std::string>(), nullptr, false);
    case Present::iso_time:
      return format_iso8601_ms(plain.get<int64_t>());
    case Present::hex_if_invalid:
      return hex_if_invalid(plain.get<std::string>());
    case Present::boolean:
      return plain.get<int64_t>() != 0;
    case Present::plain:
      break;
  }
  return plain;
}

Row row_from(const Statement& statement, std::span<const OutputField> fields) {
  Row row = Row::object();
  for (size_t i = 0; i < fields.size(); ++i) {
    row[std::string(fields[i].field)] =
        present(statement.column(static_cast<int>(i)), fields[i].present);
  }
  return row;
}

int64_t stream_rows(Statement& statement, std::span<const OutputField> fields, RowWriter& writer) {
  int64_t count = 0;
  while (statement.step()) {
    writer.write(row_from(statement, fields));
    ++count;
  }
  writer.finish();
  return count;
}

std::string limit_clause(int64_t limit) {
  return limit > 0 ? " LIMIT " + std::to_string(limit) : "";
}

}  // namespace

std::vector<std::string> run_fields() {
  return field_names(k_run_output);
}
std::vector<std::string> decision_fields() {
  return field_names(k_decision_output);
}

std::vector<std::string> connection_fields() {
  return field_names(k_connection_output);
}

std::vector<TableColumn> connection_table_columns() {
  return {
      {"START (UTC)", render_time, "start", 19}, {"RUN", render_field, "run_id", 24},
      {"VERDICT", render_field, "verdict", 7},   {"NAME", render_field, "name", 32},
      {"PORT", render_field, "port", 5},         {"ADDRESS", render_field, "address", 15},
      {"UP", render_field, "bytes_up", 9},       {"DOWN", render_field, "bytes_down", 10},
      {"REASON", render_field, "reason", 50},
  };
}

int64_t query_connections(Database& db, const Filter& run_filter, const Filter& own_filter,
                          int64_t limit, RowWriter& writer) {
  Filter filter = own_filter;
  if (!run_filter.is_empty()) {
    filter.where += " AND run_id IN (SELECT run_id FROM runs WHERE " + run_filter.where + ")";
    filter.params.insert(filter.params.end(), run_filter.params.begin(), run_filter.params.end());
  }
  auto statement = prepare_with_filter(db,
                                       "SELECT " + select_list(k_connection_output) +
                                           " FROM connections WHERE " + filter.where +
                                           " ORDER BY start_ms DESC, id DESC" + limit_clause(limit),
                                       filter, "list connections");
  return stream_rows(statement, k_connection_output, writer);
}

std::vector<TableColumn> run_table_columns() {
  std::vector<const RunField*> shown;
  for (const auto& field : k_run_fields) {
    if (!field.table.header.empty()) {
      shown.push_back(&field);
    }
  }
  std::sort(shown.begin(), shown.end(),
            [](const RunField* a, const RunField* b) { return a->table.order < b->table.order; });
  std::vector<TableColumn> columns;
  for (const RunField* field : shown) {
    columns.push_back(TableColumn{std::string(field->table.header), field->table.render,
                                  std::string(field->name), field->table.width});
  }
  return columns;
}

std::vector<TableColumn> decision_table_columns() {
  return {
      {"TIME (UTC)", render_time, "time", 19},
      {"DECISION", render_field, "decision", 8},
      {"AGENT", render_field, "agent", 12},
      {"TOOL USE", render_field, "tool_use_id", 20},
      {"RULE", render_field, "rule", 24},
      {"EXIT", render_field, "exit_code", 4},
      {"COMMAND", render_field, "original_command", 50},
  };
}

int64_t query_runs(Database& db, const Filter& filter, Order order, int64_t limit,
                   RowWriter& writer) {
  std::string direction = order == Order::newest_first ? "DESC" : "ASC";
  auto statement = prepare_with_filter(db,
                                       "SELECT " + select_list(k_run_output) + " FROM runs WHERE " +
                                           filter.where + " ORDER BY start_ms " + direction +
                                           ", id " + direction + limit_clause(limit),
                                       filter, "list runs");
  return stream_rows(statement, k_run_output, writer);
}

int64_t query_decisions(Database& db, const Filter& filter, int64_t limit, RowWriter& writer) {
  auto statement = prepare_with_filter(db,
                                       "SELECT " + select_list(k_decision_output) +
                                           " FROM decisions WHERE " + filter.where +
                                           " ORDER BY time_ms DESC, id DESC" + limit_clause(limit),
                                       filter, "list decisions");
  return stream_rows(statement, k_decision_output, writer);
}

namespace {

// A run started from a session whose environment put the shims on PATH (Claude Code's
// SessionStart) carries no tool-use id: its decision is the session's last one made before the
// run started and not completed before it, one naming the run's program first.
nlohmann::ordered_json session_decision(Database& db, const Row& run) {
  auto decisions = nlohmann::ordered_json::array();
  std::string session = render_field(run, "agent_session");
  if (session.empty()) {
    return decisions;
  }
  Statement select(db,
                   "SELECT " + select_list(k_decision_output) +
                       " FROM decisions WHERE session_id = ?1 AND agent = ?2 AND time_ms <= ?3 "
                       "AND (completed_ms IS NULL OR completed_ms >= ?3) AND decision != 'deny' "
                       "ORDER BY instr(original_command, ?4) > 0 DESC, time_ms DESC LIMIT 1",
                   "read the run's hook decision");
  select.bind(1, session).bind(2, render_field(run, "agent"));
  select.bind(3, static_cast<int64_t>(std::stoll(render_field(run, "start_ms"))));
  select.bind(4, render_field(run, "invoked_as"));
  while (select.step()) {
    decisions.push_back(row_from(select, k_decision_output));
  }
  return decisions;
}

nlohmann::ordered_json linked_decisions(Database& db, const Row& run) {
  auto decisions = nlohmann::ordered_json::array();
  std::string tool_use_id = render_field(run, "tool_use_id");
  if (tool_use_id.empty()) {
    return session_decision(db, run);
  }
  Statement select(
      db,
      "SELECT " + select_list(k_decision_output) +
          " FROM decisions WHERE tool_use_id = ?1 AND tool_use_id != '' AND (?2 = '' OR "
          "session_id = '' OR "
          "session_id = ?2) ORDER BY time_ms",
      "read the run's hook decisions");
  select.bind(1, tool_use_id).bind(2, render_field(run, "agent_session"));
  while (select.step()) {
    decisions.push_back(row_from(select, k_decision_output));
  }
  return decisions;
}

}  // namespace

std::optional<Row> find_run(Database& db, const std::string& id_or_prefix,
                            std::optional<uint32_t> only_uid) {
  Statement select(db,
                   "SELECT " + select_list(k_run_output) +
                       " FROM runs WHERE (run_id = ?1 OR (run_id > ?1 AND run_id < ?2)) "
                       "AND (?3 IS NULL OR uid = ?3) ORDER BY run_id != ?1, run_id LIMIT 2",
                   "look up the run");
  select.bind(1, id_or_prefix).bind(2, id_or_prefix + "\xff");
  select.bind(3, only_uid ? SqlValue(static_cast<int64_t>(*only_uid)) : SqlValue());
  if (!select.step()) {
    return std::nullopt;
  }
  Row run = row_from(select, k_run_output);
  if (run["run_id"] != id_or_prefix && select.step()) {
    throw Fatal(
        "run id prefix " + quoted(id_or_prefix) + " matches several runs; fix: give more of the id",
        exit_code::k_usage);
  }
  run["decisions"] = linked_decisions(db, run);
  return run;
}

Statement prepare_read_only_sql(Database& db, const std::string& sql) {
  db.execute("PRAGMA query_only = 1", "make the connection read-only");
  try {
    Statement statement(db, sql, "prepare the query");
    if (statement.has_trailing_sql()) {
      throw Fatal("bad SQL: give one statement at a time", exit_code::k_usage);
    }
    if (!statement.is_read_only()) {
      throw Fatal("refused SQL: `sandshim audit sql` only reads, and this statement would write",
                  exit_code::k_usage);
    }
    return statement;
  } catch (const SqliteError& error) {
    throw Fatal("bad SQL: " + error.sqlite_message(), exit_code::k_usage);
  }
}

std::vector<std::string> column_names(const Statement& statement) {
  std::vector<std::string> names;
  for (int column = 0; column < statement.column_count(); ++column) {
    names.push_back(statement.column_name(column));
  }
  return names;
}

int64_t stream_sql(Statement& statement, RowWriter& writer) {
  auto names = column_names(statement);
  int64_t count = 0;
  try {
    while (statement.step()) {
      Row row = Row::object();
      for (size_t i = 0; i < names.size(); ++i) {
        row[names[i]] = plain_value(statement.column(static_cast<int>(i)));
      }
      writer.write(row);
      ++count;
    }
  } catch (const SqliteError& error) {
    if (error.primary_code() != 1 /* SQLITE_ERROR: the query's fault */) {
      throw;
    }
    throw Fatal("SQL failed: " + error.sqlite_message(), exit_code::k_usage);
  }
  writer.finish();
  return count;
}

}  // namespace sandshim::audit
