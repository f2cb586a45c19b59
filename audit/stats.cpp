#include <algorithm>
#include <array>
#include <unordered_map>

#include "audit/query.hpp"
#include "audit/run_record.hpp"
#include "audit/time_spec.hpp"

namespace sandshim::audit {

namespace {

constexpr int64_t k_day_ms = 86400000;

// The groups `stats` counts by, and their columns in both runs and run_counts.
constexpr std::array<std::string_view, 4> k_stat_groups = {"status", "command", "image", "agent"};

using Counts = std::unordered_map<std::string, int64_t>;

// Where the counts come from: the trigger-kept run_counts (finished runs, schema 8) and the
// few running rows read through runs_running, when the filter reads only their columns; else
// the matching runs themselves.
struct CountSource {
  std::string table;
  std::string count;
  std::string day;
};

constexpr const char* k_counted_runs =
    "(SELECT day, status, invoked_as, image, agent, runs FROM run_counts UNION ALL "
    "SELECT start_ms / 86400000, status, invoked_as, image, agent, 1 FROM runs "
    "WHERE status = 'running')";

CountSource count_source(const Filter& filter) {
  if (filter.reads_only({"status", "invoked_as", "image", "agent"})) {
    return {k_counted_runs, "sum(runs)", "day"};
  }
  return {"runs", "count(*)", "start_ms / 86400000"};
}

// Nearest-rank percentile of sorted values: the smallest value with at least p% at or below it.
int64_t nearest_rank(int64_t count, int64_t percent) {
  return std::max<int64_t>((percent * count + 99) / 100, 1);
}

DurationSummary summarize(std::vector<int64_t>& durations) {
  if (durations.empty()) {
    return {};
  }
  std::sort(durations.begin(), durations.end());
  auto count = static_cast<int64_t>(durations.size());
  auto at_rank = [&](int64_t percent) {
    return durations[static_cast<size_t>(nearest_rank(count, percent) - 1)];
  };
  return DurationSummary{count, at_rank(50), at_rank(95), durations.back()};
}

int64_t single_value(Database& db, const std::string& sql, int64_t bind = -1) {
  auto select = db.cached(sql, "read run durations");
  if (bind >= 0) {
    select->bind(1, bind);
  }
  return select->step() ? select->column_int(0) : 0;
}

// Unfiltered: ranks read straight off the runs_duration index, no sort and no full read.
DurationSummary indexed_durations(Database& db) {
  constexpr const char* k_where = " FROM runs WHERE duration_ms IS NOT NULL";
  int64_t count = single_value(db, std::string("SELECT count(*)") + k_where);
  if (count == 0) {
    return {};
  }
  std::string at_offset =
      std::string("SELECT duration_ms") + k_where + " ORDER BY duration_ms LIMIT 1 OFFSET ?";
  return DurationSummary{count, single_value(db, at_offset, nearest_rank(count, 50) - 1),
                         single_value(db, at_offset, nearest_rank(count, 95) - 1),
                         single_value(db, std::string("SELECT max(duration_ms)") + k_where)};
}

// Filtered: one read of the matching durations, sorted here.
DurationSummary filtered_durations(Database& db, const Filter& filter) {
  auto select = prepare_with_filter(
      db, "SELECT duration_ms FROM runs WHERE duration_ms IS NOT NULL AND " + filter.where, filter,
      "read run durations");
  std::vector<int64_t> durations;
  while (select.step()) {
    durations.push_back(select.column_int(0));
  }
  return summarize(durations);
}

// Most frequent first, then by name, so the output is stable.
std::vector<std::pair<std::string, int64_t>> ranked(const Counts& counts) {
  std::vector<std::pair<std::string, int64_t>> result;
  for (const auto& entry : counts) {
    if (entry.second > 0) {
      result.emplace_back(entry);
    }
  }
  std::sort(result.begin(), result.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return result;
}

std::array<Counts, 4> count_groups(Database& db, const Filter& filter) {
  CountSource source = count_source(filter);
  auto select =
      prepare_with_filter(db,
                          "SELECT status, invoked_as, image, agent, " + source.count + " FROM " +
                              source.table + " WHERE " + filter.where + " GROUP BY 1, 2, 3, 4",
                          filter, "count runs");
  std::array<Counts, 4> counts;
  while (select.step()) {
    for (size_t i = 0; i < counts.size(); ++i) {
      counts[i][select.column_text(static_cast<int>(i))] += select.column_int(4);
    }
  }
  return counts;
}

void add_daily_counts(Database& db, const Filter& filter, std::map<int64_t, DayStats>& days) {
  CountSource source = count_source(filter);
  auto select =
      prepare_with_filter(db,
                          "SELECT " + source.day + ", status, " + source.count + " FROM " +
                              source.table + " WHERE " + filter.where + " GROUP BY 1, 2",
                          filter, "count runs by day");
  while (select.step()) {
    if (select.column_int(2) > 0) {
      DayStats& day = days[select.column_int(0)];
      day.by_status[select.column_text(1)] += select.column_int(2);
      day.runs += select.column_int(2);
    }
  }
}

void add_daily_durations(Database& db, const Filter& filter, std::map<int64_t, DayStats>& days) {
  auto select = prepare_with_filter(db,
                                    "SELECT start_ms / 86400000, duration_ms FROM runs WHERE "
                                    "duration_ms IS NOT NULL AND " +
                                        filter.where,
                                    filter, "read run durations by day");
  std::map<int64_t, std::vector<int64_t>> durations;
  while (select.step()) {
    durations[select.column_int(0)].push_back(select.column_int(1));
  }
  for (auto& [day_number, values] : durations) {
    days[day_number].duration = summarize(values);
  }
}

Row duration_json(const DurationSummary& duration) {
  return Row{{"count", duration.count},
             {"p50", duration.p50},
             {"p95", duration.p95},
             {"max", duration.max}};
}

}  // namespace

Stats compute_stats(Database& db, const Filter& filter) {
  Stats stats;
  auto counts = count_groups(db, filter);
  for (size_t i = 0; i < counts.size(); ++i) {
    stats.groups.emplace_back(std::string(k_stat_groups[i]), ranked(counts[i]));
  }
  for (const auto& [status, count] : stats.groups.front().second) {
    stats.runs += count;
  }
  stats.duration = filter.is_empty() ? indexed_durations(db) : filtered_durations(db, filter);
  return stats;
}

std::vector<DayStats> compute_daily_stats(Database& db, const Filter& filter) {
  std::map<int64_t, DayStats> days;
  add_daily_counts(db, filter, days);
  add_daily_durations(db, filter, days);
  std::vector<DayStats> result;
  for (auto& [day_number, day] : days) {
    day.day = format_day(day_number * k_day_ms);
    result.push_back(std::move(day));
  }
  return result;
}

Row stats_json(const Stats& stats) {
  Row result{{"runs", stats.runs}};
  for (const auto& [group, counts] : stats.groups) {
    Row by = Row::object();
    for (const auto& [key, count] : counts) {
      by[key] = count;
    }
    result["by_" + group] = by;
  }
  result["duration_ms"] = duration_json(stats.duration);
  return result;
}

std::vector<Row> stats_rows(const Stats& stats) {
  std::vector<Row> rows{Row{{"group", "runs"}, {"key", ""}, {"value", stats.runs}}};
  for (const auto& [group, counts] : stats.groups) {
    for (const auto& [key, count] : counts) {
      rows.push_back(Row{{"group", group}, {"key", key}, {"value", count}});
    }
  }
  Row duration = duration_json(stats.duration);
  for (const auto& [key, value] : duration.items()) {
    rows.push_back(Row{{"group", "duration_ms"}, {"key", key}, {"value", value}});
  }
  return rows;
}

std::vector<std::string> day_fields() {
  std::vector<std::string> fields{"day", "runs"};
  for (const auto& status : run_status_names()) {
    fields.push_back(status);
  }
  fields.insert(fields.end(), {"p50_ms", "p95_ms", "max_ms"});
  return fields;
}

Row day_row(const DayStats& day) {
  Row row{{"day", day.day}, {"runs", day.runs}};
  for (const auto& status : run_status_names()) {
    auto found = day.by_status.find(status);
    row[status] = found == day.by_status.end() ? 0 : found->second;
  }
  row["p50_ms"] = day.duration.p50;
  row["p95_ms"] = day.duration.p95;
  row["max_ms"] = day.duration.max;
  return row;
}

}  // namespace sandshim::audit
