// The query commands of `sandshim audit`: list, show, stats, export (its rows), decisions,
// connections and sql, on the database or on merged fleet exports.
#include <fstream>

#include "audit/command_detail.hpp"
#include "audit/encoding.hpp"
#include "audit/fleet_verify.hpp"
#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "common/escape.hpp"
#include "common/strings.hpp"

namespace sandshim::audit::command_detail {

namespace {

constexpr std::pair<std::string_view, Format> k_format_flags[] = {{"table", Format::table},
                                                                  {"json", Format::json},
                                                                  {"jsonl", Format::jsonl},
                                                                  {"csv", Format::csv}};

}  // namespace

Format chosen_format(const Invocation& invocation, std::optional<Format> fallback) {
  for (const auto& [flag, format] : k_format_flags) {
    if (invocation.options.count(std::string(flag)) != 0) {
      return format;
    }
  }
  return fallback ? *fallback : invocation.tty ? Format::table : Format::jsonl;
}

std::map<std::string, std::string> filter_values(const Invocation& invocation) {
  std::map<std::string, std::string> values;
  for (const auto& spec : filter_specs()) {
    std::string option(spec.option);
    if (invocation.options.count(option) != 0) {
      values[option] = invocation.options[option].as<std::string>();
    }
  }
  return values;
}

// The options' filter, narrowed to the viewer's own rows when the broker asks for one caller.
Filter filter_for(const Invocation& invocation, Subject subject) {
  Filter filter = build_filter(subject, filter_values(invocation), invocation.now_ms);
  if (auto uid = invocation.context.viewer.only_uid) {
    filter.where = "(" + filter.where + ") AND uid = ?";
    filter.params.emplace_back(static_cast<int64_t>(*uid));
    filter.columns.insert("uid");
  }
  return filter;
}

[[noreturn]] void administrators_only(std::string_view what) {
  throw Fatal("audit " + std::string(what) +
                  " is an administrator's command (root or the broker's user " + k_broker_user +
                  "); fix: ask an administrator to run `sudo sandshim audit " + std::string(what) +
                  " ...`",
              exit_code::k_sandbox_error);
}

int64_t limit_of(const Invocation& invocation) {
  return invocation.options["limit"].as<int64_t>();
}

Store open_store(const Invocation& invocation, bool writable) {
  return Store::open(
      StoreOptions{invocation.db_path, std::chrono::milliseconds(5000), !writable, false});
}

std::vector<std::filesystem::path> export_files(const Invocation& invocation) {
  std::vector<std::filesystem::path> files;
  for (const auto& file : invocation.options["export"].as<std::vector<std::string>>()) {
    files.emplace_back(file);
  }
  return files;
}

bool from_export(const Invocation& invocation) {
  return invocation.options.count("export") != 0;
}

Source::Source(const Invocation& invocation) {
  if (from_export(invocation)) {
    m_memory = load_exports(read_exports(export_files(invocation)));
  } else {
    m_store.emplace(open_store(invocation, false));
  }
}

// One JSON document: indented for --json, on one line for --jsonl.
void write_document(const Invocation& invocation, const Row& document, Format format) {
  invocation.out << to_json_text(document, format == Format::jsonl ? -1 : 2) << '\n';
}

namespace {

int list_runs_as(const Invocation& invocation, Order order, std::optional<Format> fallback) {
  Source source(invocation);
  Filter filter = filter_for(invocation, Subject::runs);
  auto writer = make_row_writer(chosen_format(invocation, fallback), invocation.out, run_fields(),
                                run_table_columns(), invocation.color);
  query_runs(source.database(), filter, order, limit_of(invocation), *writer);
  return 0;
}

// --run, --name and --verdict: the connections' own columns.
Filter connection_filter(const Invocation& invocation) {
  Filter filter;
  auto add = [&](const char* option, const std::string& clause) {
    if (invocation.options.count(option) != 0) {
      filter.where += " AND " + clause;
      filter.params.emplace_back(invocation.options[option].as<std::string>());
    }
  };
  add("run", "run_id GLOB ? || '*'");
  add("name", "name GLOB ?");
  if (invocation.options.count("verdict") != 0) {
    std::string verdict = invocation.options["verdict"].as<std::string>();
    if (verdict != "allowed" && verdict != "refused") {
      throw Fatal("bad value " + quoted(verdict) + " for --verdict: expected allowed or refused",
                  exit_code::k_usage);
    }
  }
  add("verdict", "verdict = ?");
  return filter;
}

// `show` on a terminal: one field a line, then the output tails and the hook decisions.
void write_run_details(std::ostream& out, const Row& run, bool color) {
  constexpr std::string_view k_blocks[] = {"stdout_tail", "stderr_tail", "decisions"};
  auto is_block = [&](const std::string& key) {
    return std::find(std::begin(k_blocks), std::end(k_blocks), key) != std::end(k_blocks);
  };
  for (const auto& [key, value] : run.items()) {
    if (!is_block(key)) {
      out << key << std::string(key.size() < 16 ? 16 - key.size() : 1, ' ')
          << printable(cell_text(value)) << '\n';
    }
  }
  for (const auto& [tail, bytes] :
       {std::pair{"stdout_tail", "stdout_bytes"}, std::pair{"stderr_tail", "stderr_bytes"}}) {
    std::string text = printable(cell_text(run[tail]), true);
    bool ends_line = text.empty() || text.back() == '\n';
    out << '\n'
        << tail << " (of " << render_field(run, bytes) << " bytes in all):\n"
        << text << (ends_line ? "" : "\n");
  }
  out << "\ndecisions:\n";
  auto writer =
      make_row_writer(Format::table, out, decision_fields(), decision_table_columns(), color);
  for (const auto& decision : run["decisions"]) {
    writer->write(decision);
  }
  writer->finish();
}

void write_rows(const Invocation& invocation, const std::vector<std::string>& fields,
                const std::vector<Row>& rows) {
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, fields,
                                plain_columns(fields), invocation.color);
  for (const auto& row : rows) {
    writer->write(row);
  }
  writer->finish();
}

int run_daily_stats(const Invocation& invocation, Database& db, const Filter& filter) {
  if (invocation.options["by"].as<std::string>() != "day") {
    throw Fatal("bad value " + quoted(invocation.options["by"].as<std::string>()) +
                    " for --by: expected day",
                exit_code::k_usage);
  }
  std::vector<Row> rows;
  for (const auto& day : compute_daily_stats(db, filter)) {
    rows.push_back(day_row(day));
  }
  write_rows(invocation, day_fields(), rows);
  return 0;
}

}  // namespace

int run_list(const Invocation& invocation) {
  return list_runs_as(invocation, Order::newest_first, std::nullopt);
}

int run_export(const Invocation& invocation) {
  if (invocation.options.count("format") != 0) {
    if (!filter_values(invocation).empty() || invocation.options["limit"].as<int64_t>() != 0) {
      throw Fatal("--format exports the whole chain: it takes no filter or --limit (use --after)",
                  exit_code::k_usage);
    }
    return run_fleet_export(invocation);
  }
  for (const char* option : {"follow", "syslog", "socket", "output", "hostname", "after"}) {
    if (invocation.options.count(option) != 0) {
      throw Fatal(std::string("--") + option + " needs --format fleet or --format ocsf",
                  exit_code::k_usage);
    }
  }
  return list_runs_as(invocation, Order::oldest_first, Format::jsonl);
}

int run_decisions(const Invocation& invocation) {
  Source source(invocation);
  Filter filter = filter_for(invocation, Subject::decisions);
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, decision_fields(),
                                decision_table_columns(), invocation.color);
  query_decisions(source.database(), filter, limit_of(invocation), *writer);
  return 0;
}

int run_connections(const Invocation& invocation) {
  Source source(invocation);
  Filter runs = filter_for(invocation, Subject::runs);
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, connection_fields(),
                                connection_table_columns(), invocation.color);
  query_connections(source.database(), runs, connection_filter(invocation), limit_of(invocation),
                    *writer);
  return 0;
}

int run_show(const Invocation& invocation) {
  Source source(invocation);
  std::string id = invocation.options["id"].as<std::string>();
  auto run = find_run(source.database(), id, invocation.context.viewer.only_uid);
  if (!run) {
    throw Fatal("no run matches " + quoted(id) + "; see `sandshim audit list`", 1);
  }
  Format format = chosen_format(invocation);
  if (format == Format::table) {
    write_run_details(invocation.out, *run, invocation.color);
  } else if (format == Format::csv) {
    auto fields = run_fields();
    fields.emplace_back("decisions");
    auto writer = make_row_writer(format, invocation.out, fields, {});
    writer->write(*run);
    writer->finish();
  } else {
    write_document(invocation, *run, format);
  }
  return 0;
}

int run_stats(const Invocation& invocation) {
  Source source(invocation);
  Filter filter = filter_for(invocation, Subject::runs);
  if (invocation.options.count("by") != 0) {
    return run_daily_stats(invocation, source.database(), filter);
  }
  Stats stats = compute_stats(source.database(), filter);
  Format format = chosen_format(invocation);
  if (format == Format::json || format == Format::jsonl) {
    write_document(invocation, stats_json(stats), format);
  } else {
    write_rows(invocation, {"group", "key", "value"}, stats_rows(stats));
  }
  return 0;
}

int run_sql(const Invocation& invocation) {
  if (invocation.context.viewer.only_uid) {
    administrators_only("sql");  // a statement could read every user's rows
  }
  Source source(invocation);
  Statement statement =
      prepare_read_only_sql(source.database(), invocation.options["query"].as<std::string>());
  auto fields = column_names(statement);
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, fields,
                                plain_columns(fields), invocation.color);
  stream_sql(statement, *writer);
  return 0;
}

}  // namespace sandshim::audit::command_detail
