#include <algorithm>
#include <array>
#include <unordered_map>

#include "audit/query.hpp"
#include "audit/run_record.hpp"
#include "audit/time_spec.hpp"

namespace sandshim::audit {

namespace {

constexpr int64_t k_day_ms = 86400000;

// The groups `stats` counts by, in the order of the runs_summary index columns.
constexpr std::array<std::string_view, 4> k_stat_groups = {"status", "command", "image", "agent"};

using Counts = std::unordered_map<std::string, int64_t>;

// What one scan of the runs_summary covering index yields for each run.
struct Summary {
  std::array<std::string, 4> groups;  // status, invoked_as, image, agent
  std::optional<int64_t> duration_ms;
  int64_t start_ms = 0;
};

// One pass over the matching runs; without a filter SQLite reads only the covering index.
template <typename Visit>
void scan_summaries(Database& db, const Filter& filter, Visit&& visit) {
  auto select = prepare_with_filter(db,
                                    "SELECT status, invoked_as, image, agent, duration_ms, "
                                    "start_ms FROM runs WHERE " +
                                        filter.where,
                                    filter, "read run summaries");
  Summary summary;
  while (select.step()) {
    for (int i = 0; i < 4; ++i) {
      summary.groups[static_cast<size_t>(i)] = select.column_text(i);
    }
    summary.duration_ms =
        select.column_is_null(4) ? std::nullopt : std::optional<int64_t>(select.column_int(4));
    summary.start_ms = select.column_int(5);
    visit(summary);
  }
}

// Nearest-rank percentile of sorted values: the smallest value with at least p% at or below it.
int64_t percentile(const std::vector<int64_t>& sorted, int64_t percent) {
  auto count = static_cast<int64_t>(sorted.size());
  int64_t rank = (percent * count + 99) / 100;
  return sorted[static_cast<size_t>(std::max<int64_t>(rank, 1) - 1)];
}

DurationSummary summarize(std::vector<int64_t>& durations) {
  if (durations.empty()) {
    return {};
  }
  std::sort(durations.begin(), durations.end());
  return DurationSummary{static_cast<int64_t>(durations.size()), percentile(durations, 50),
                         percentile(durations, 95), durations.back()};
}

// Most frequent first, then by name, so the output is stable.
std::vector<std::pair<std::string, int64_t>> ranked(const Counts& counts) {
  std::vector<std::pair<std::string, int64_t>> result(counts.begin(), counts.end());
  std::sort(result.begin(), result.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return result;
}

struct DayAccumulator {
  std::map<std::string, int64_t> by_status;
  std::vector<int64_t> durations;
  int64_t runs = 0;
};

Row duration_json(const DurationSummary& duration) {
  return Row{{"count", duration.count},
             {"p50", duration.p50},
             {"p95", duration.p95},
             {"max", duration.max}};
}

}  // namespace

Stats compute_stats(Database& db, const Filter& filter) {
  std::array<Counts, 4> counts;
  std::vector<int64_t> durations;
  Stats stats;
  scan_summaries(db, filter, [&](const Summary& run) {
    for (size_t i = 0; i < counts.size(); ++i) {
      ++counts[i][run.groups[i]];
    }
    if (run.duration_ms) {
      durations.push_back(*run.duration_ms);
    }
    ++stats.runs;
  });
  for (size_t i = 0; i < counts.size(); ++i) {
    stats.groups.emplace_back(std::string(k_stat_groups[i]), ranked(counts[i]));
  }
  stats.duration = summarize(durations);
  return stats;
}

std::vector<DayStats> compute_daily_stats(Database& db, const Filter& filter) {
  std::map<int64_t, DayAccumulator> days;
  scan_summaries(db, filter, [&](const Summary& run) {
    DayAccumulator& day = days[run.start_ms / k_day_ms];
    ++day.by_status[run.groups[0]];
    ++day.runs;
    if (run.duration_ms) {
      day.durations.push_back(*run.duration_ms);
    }
  });
  std::vector<DayStats> result;
  for (auto& [day_number, day] : days) {
    result.push_back(DayStats{format_day(day_number * k_day_ms), day.runs, day.by_status,
                              summarize(day.durations)});
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
