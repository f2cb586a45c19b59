#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audit/output.hpp"
#include "audit/sqlite.hpp"

namespace sandshim::audit {

enum class Subject { runs, decisions };

enum class FilterKind {
  since,
  until,
  status_list,
  decision_list,
  glob,
  exact,
  path_prefix,
  integer
};

// One filter option of `sandshim audit`: the option, its help, and the column it constrains in
// each table (empty where it does not apply). Options and SQL are both built from this table.
struct FilterSpec {
  std::string_view option;
  std::string_view value_name;
  std::string_view help;
  FilterKind kind;
  std::string_view run_column;
  std::string_view decision_column;
};

std::span<const FilterSpec> filter_specs();
std::string_view filter_column(const FilterSpec& spec, Subject subject);

// A WHERE clause and its bound values.
struct Filter {
  std::string where = "1";
  std::vector<SqlValue> params;
  std::set<std::string> columns;  // the columns `where` reads

  bool is_empty() const { return where == "1"; }
  // True when every column the filter reads is one of `available`.
  bool reads_only(std::initializer_list<std::string_view> available) const;
};

// Turns option values (option name -> text) into SQL; a bad value is a usage error that names
// the option and what it accepts.
Filter build_filter(Subject subject, const std::map<std::string, std::string>& values,
                    int64_t now_ms);

// A statement whose `?` placeholders are the filter's values, in order.
Statement prepare_with_filter(Database& db, const std::string& sql, const Filter& filter,
                              std::string_view action);

// The stable output fields, in order (documented in audit/FIELDS.md).
std::vector<std::string> run_fields();
std::vector<std::string> decision_fields();

// The columns people see in a table; the other formats carry every field.
std::vector<TableColumn> run_table_columns();
std::vector<TableColumn> decision_table_columns();

std::vector<std::string> connection_fields();
std::vector<TableColumn> connection_table_columns();

enum class Order { newest_first, oldest_first };

// Streams the matching runs; `limit` 0 means all. Returns how many were written.
int64_t query_runs(Database& db, const Filter& filter, Order order, int64_t limit,
                   RowWriter& writer);
int64_t query_decisions(Database& db, const Filter& filter, int64_t limit, RowWriter& writer);

// Streams the egress connections (newest first) that match `own_filter` (their own columns:
// run_id, name, verdict, start_ms) and whose run matches `run_filter`.
int64_t query_connections(Database& db, const Filter& run_filter, const Filter& own_filter,
                          int64_t limit, RowWriter& writer);

// One run by its id or a unique prefix of it, with the hook decisions linked to it by
// tool_use_id. Nullopt when nothing matches; a usage error when the prefix is ambiguous.
// `only_uid`: the broker's per-caller view, runs of that uid only.
std::optional<Row> find_run(Database& db, const std::string& id_or_prefix,
                            std::optional<uint32_t> only_uid = std::nullopt);

// Prepares one statement of the user's on a read-only connection; refuses bad SQL, more than one
// statement, and anything sqlite3_stmt_readonly says could write (usage errors, exit 2).
Statement prepare_read_only_sql(Database& db, const std::string& sql);
std::vector<std::string> column_names(const Statement& statement);
// Streams every row of a user's statement, each column as its SQL type.
int64_t stream_sql(Statement& statement, RowWriter& writer);

struct DurationSummary {
  int64_t count = 0;  // finished runs with a duration
  int64_t p50 = 0;    // nearest-rank percentiles, milliseconds
  int64_t p95 = 0;
  int64_t max = 0;
};

struct Stats {
  int64_t runs = 0;
  // ("status", [("ok", 12), ...]), then command, image, agent; most frequent first.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, int64_t>>>> groups;
  DurationSummary duration;
};

struct DayStats {
  std::string day;  // UTC, 2024-05-01
  int64_t runs = 0;
  std::map<std::string, int64_t> by_status;
  DurationSummary duration;
};

Stats compute_stats(Database& db, const Filter& filter);
std::vector<DayStats> compute_daily_stats(Database& db, const Filter& filter);

Row stats_json(const Stats& stats);
// The same figures as (group, key, value) rows, for CSV and the table.
std::vector<Row> stats_rows(const Stats& stats);
std::vector<std::string> day_fields();
Row day_row(const DayStats& day);

}  // namespace sandshim::audit
