#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "audit/encoding.hpp"
#include "audit/output.hpp"
#include "audit/run_record.hpp"
#include "audit/sqlite.hpp"

namespace sandshim::audit {

// Who writes a field's column.
enum class Written {
  at_begin,   // begin_run inserts it; complete_run leaves it (it is in an index a rewrite dirties)
  by_record,  // begin_run inserts it and complete_run rewrites it, from the record
  by_chain,   // the chain sets it when the row is sealed; no record value
  shown,      // no column of its own: it shows another field's column another way
};

// Where a field appears in the people-facing table: not at all when `header` is empty.
struct TableCell {
  std::string_view header;
  int order = 0;  // left to right
  size_t width = 40;
  std::string (*render)(const Row& row, const std::string& field) = render_field;
};

// One field of a run, as `list`, `show` and `export` give it (audit/FIELDS.md), and the runs
// column behind it. This table drives the schema (CREATE TABLE for schema 1, an ALTER TABLE for
// each later column), the insert and the completion, the SELECT of every query, the JSON, CSV and
// table writers, the chain's hashed columns and the fleet export's. Adding a run column is an
// entry here with the next schema version, a member of RunRecord and the line that fills it.
// Entries are frozen once released: never reorder, retype or remove one.
struct RunField {
  std::string_view name;      // the stable output field
  std::string_view column;    // the runs column it reads: its own, or the one it shows
  std::string_view sql_type;  // the column's declaration; empty when `shown`
  int64_t since;              // the schema version that added the column
  Written written;
  SqlValue (*value)(const RunRecord&) = nullptr;  // what begin_run and complete_run store
  Present present = Present::plain;
  TableCell table = {};
};

// How record members become column values (the decisions' columns use them too).
namespace column_values {

inline SqlValue optional_int(const std::optional<int>& value) {
  return value ? SqlValue(static_cast<int64_t>(*value)) : SqlValue(std::monostate{});
}

inline SqlValue nonzero_or_null(int64_t value) {
  return value != 0 ? SqlValue(value) : SqlValue(std::monostate{});
}

inline SqlValue json_list(const std::vector<std::string>& values) {
  return args_to_json(values);
}

}  // namespace column_values

// The fields in output order. The columns of schema 1 are in CREATE TABLE's order among them.
inline constexpr RunField k_run_fields[] = {
    {"run_id",
     "run_id",
     "TEXT NOT NULL UNIQUE",
     1,
     Written::at_begin,
     [](const RunRecord& r) -> SqlValue { return r.run_id; },
     Present::plain,
     {"RUN", 1, 24}},
    {"status",
     "status",
     "TEXT NOT NULL",
     1,
     Written::by_record,
     [](const RunRecord& r) -> SqlValue { return to_string(r.status); },
     Present::plain,
     {"STATUS", 4, 12}},
    {"start",
     "start_ms",
     "",
     1,
     Written::shown,
     nullptr,
     Present::iso_time,
     {"START (UTC)", 2, 19, render_time}},
    {"end", "end_ms", "", 1, Written::shown, nullptr, Present::iso_time},
    {"start_ms", "start_ms", "INTEGER NOT NULL", 1, Written::at_begin,
     [](const RunRecord& r) -> SqlValue { return r.start_ms; }},
    {"end_ms", "end_ms", "INTEGER", 1, Written::by_record,
     [](const RunRecord& r) { return column_values::nonzero_or_null(r.end_ms); }},
    {"duration_ms",
     "duration_ms",
     "INTEGER",
     1,
     Written::by_record,
     [](const RunRecord& r) {
       return r.end_ms != 0 ? SqlValue(r.end_ms - r.start_ms) : SqlValue();
     },
     Present::plain,
     {"TOOK", 3, 10, render_duration}},
    {"invoked_as", "invoked_as", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.invoked_as; }},
    {"argv",
     "argv",
     "TEXT NOT NULL",
     1,
     Written::by_record,
     [](const RunRecord& r) { return column_values::json_list(r.argv); },
     Present::json_text,
     {"COMMAND", 8, 60, render_command}},
    {"argv_hex", "argv_raw", "BLOB NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return Blob{pack_args(r.argv)}; },
     Present::hex_if_invalid},
    {"cwd", "cwd", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.cwd; }},
    {"workspace", "workspace", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.workspace; }},
    {"engine", "engine", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.engine; }},
    {"image",
     "image",
     "TEXT NOT NULL",
     1,
     Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.image; },
     Present::plain,
     {"IMAGE", 7, 28}},
    {"image_digest", "image_digest", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.image_digest; }},
    {"container_name", "container_name", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.container_name; }},
    {"engine_args", "engine_args", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) { return column_values::json_list(r.engine_args); },
     Present::json_text},
    {"policy_digest", "policy_digest", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.policy_digest; }},
    {"policy_sources", "policy_sources", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) { return column_values::json_list(r.policy_sources); },
     Present::json_text},
    {"limits", "limits", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.limits; }},
    {"exit_code",
     "exit_code",
     "INTEGER",
     1,
     Written::by_record,
     [](const RunRecord& r) { return column_values::optional_int(r.exit_code); },
     Present::plain,
     {"EXIT", 5, 4}},
    {"signal", "signal", "INTEGER", 1, Written::by_record,
     [](const RunRecord& r) { return column_values::optional_int(r.signal); }},
    {"message", "message", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.message; }},
    {"stdout_bytes", "stdout_bytes", "INTEGER NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.stdout_bytes; }},
    {"stderr_bytes", "stderr_bytes", "INTEGER NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.stderr_bytes; }},
    {"stdout_tail", "stdout_tail", "BLOB NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return Blob{r.stdout_tail}; }},
    {"stderr_tail", "stderr_tail", "BLOB NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return Blob{r.stderr_tail}; }},
    {"uid", "uid", "INTEGER NOT NULL", 1, Written::at_begin,
     [](const RunRecord& r) -> SqlValue { return static_cast<int64_t>(r.uid); }},
    {"host", "host", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.host; }},
    {"pid", "pid", "INTEGER NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return static_cast<int64_t>(r.pid); }},
    {"ppid", "ppid", "INTEGER NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return static_cast<int64_t>(r.ppid); }},
    {"parent_name", "parent_name", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.parent_name; }},
    {"agent",
     "agent",
     "TEXT NOT NULL",
     1,
     Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.agent; },
     Present::plain,
     {"AGENT", 6, 12}},
    {"agent_session", "agent_session", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.agent_session; }},
    {"tool_use_id", "tool_use_id", "TEXT NOT NULL", 1, Written::at_begin,
     [](const RunRecord& r) -> SqlValue { return r.tool_use_id; }},
    {"env_names", "env_names", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) { return column_values::json_list(r.env_names); }, Present::json_text},
    {"warm", "warm", "INTEGER NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return int64_t{r.warm ? 1 : 0}; }, Present::boolean},
    {"hidden_count", "hidden_count", "INTEGER", 6, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.hidden_count; }},
    {"hidden_globs", "hidden_globs", "TEXT", 6, Written::by_record,
     [](const RunRecord& r) { return column_values::json_list(r.hidden_globs); },
     Present::json_text},
    {"boot_id", "boot_id", "TEXT NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.boot_id; }},
    {"pid_start_ticks", "pid_start_ticks", "INTEGER NOT NULL", 1, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.pid_start_ticks; }},
    {"limit_hit", "limit_hit", "TEXT", 5, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.limit_hit; }},
    {"via", "via", "TEXT", 9, Written::by_record,
     [](const RunRecord& r) -> SqlValue { return r.via; }},
    {"changed_count", "changed_count", "INTEGER", 10, Written::by_record,
     [](const RunRecord& r) -> SqlValue {
       return r.changed_count ? SqlValue(*r.changed_count) : SqlValue(std::monostate{});
     }},
    {"changed_paths", "changed_paths", "TEXT", 10, Written::by_record,
     [](const RunRecord& r) -> SqlValue {
       return r.changed_count ? column_values::json_list(r.changed_paths)
                              : SqlValue(std::monostate{});
     },
     Present::json_text},
    {"chain_seq", "chain_seq", "INTEGER", 1, Written::by_chain},
    {"prev_hash", "prev_hash", "TEXT", 1, Written::by_chain},
    {"row_hash", "row_hash", "TEXT", 1, Written::by_chain},
};

constexpr bool has_column(const RunField& field) {
  return field.written != Written::shown;
}

// The newest schema version a run column needs.
constexpr int64_t newest_run_column_version() {
  int64_t newest = 1;
  for (const auto& field : k_run_fields) {
    newest = std::max(newest, field.since);
  }
  return newest;
}

// Visits the columns in the order SQLite keeps them: schema 1's as CREATE TABLE declared them,
// then each later one as its ALTER TABLE appended it (by version, then table order). The chain
// hashes them in this order.
template <typename Visit>
constexpr void for_each_stored_column(Visit visit) {
  for (int64_t version = 1; version <= newest_run_column_version(); ++version) {
    for (const auto& field : k_run_fields) {
      if (has_column(field) && field.since == version) {
        visit(field);
      }
    }
  }
}

// Every column but row_hash (and id): what a run's link covers.
constexpr bool is_hashed_run_column(const RunField& field) {
  return field.column != "row_hash";
}

// A column added after the chain's encoding was fixed: hashed only when not null, so rows
// chained before it existed keep their hash.
constexpr bool is_added_run_column(const RunField& field) {
  return field.since > 1;
}

template <bool (*Keep)(const RunField&)>
constexpr size_t run_column_list_length() {
  size_t total = 0;
  for_each_stored_column([&](const RunField& field) {
    if (Keep(field)) {
      total += (total == 0 ? 0 : 2) + field.column.size();
    }
  });
  return total;
}

// The stored columns `Keep` selects, as one constant ", "-separated list.
template <bool (*Keep)(const RunField&)>
class RunColumnList {
 public:
  constexpr RunColumnList() {
    size_t at = 0;
    for_each_stored_column([&](const RunField& field) {
      if (!Keep(field)) {
        return;
      }
      if (at != 0) {
        m_text[at++] = ',';
        m_text[at++] = ' ';
      }
      for (char c : field.column) {
        m_text[at++] = c;
      }
    });
  }
  constexpr std::string_view view() const { return {m_text.data(), m_text.size() - 1}; }

 private:
  std::array<char, run_column_list_length<Keep>() + 1> m_text{};
};

inline constexpr RunColumnList<is_hashed_run_column> k_run_hashed_columns{};
inline constexpr RunColumnList<is_added_run_column> k_run_added_columns{};

}  // namespace sandshim::audit
