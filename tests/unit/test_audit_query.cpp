#include <catch2/catch.hpp>

#include "audit/chain.hpp"
#include "audit/query.hpp"
#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t k_base_ms = 1714550400000;  // 2024-05-01T08:00:00Z
constexpr int64_t k_day_ms = 86400000;

// Collects rows instead of printing them.
class CollectingWriter : public RowWriter {
 public:
  void write(const Row& row) override { rows.push_back(row); }
  void finish() override {}
  std::vector<Row> rows;
};

std::string usage_error(const std::function<void()>& body) {
  return fatal_message(body, 2);
}

// Six runs with distinct values in every filtered column.
fs::path varied_runs(const TempDir& dir) {
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  auto add = [&](const std::string& id, int64_t start, RunStatus status, const std::string& command,
                 const std::string& image, const std::string& agent, const std::string& cwd,
                 int exit_code) {
    RunRecord record = sample_run(id, start, status);
    record.invoked_as = command;
    record.image = image;
    record.agent = agent;
    record.agent_session = agent + "-session";
    record.cwd = cwd;
    record.exit_code = exit_code;
    add_run(store, record);
  };
  add("a", k_base_ms, RunStatus::ok, "python", "python:3.12", "claude-code", "/work/app", 0);
  add("b", k_base_ms + 1000, RunStatus::error, "python", "python:3.11", "codex", "/work/app/src",
      1);
  add("c", k_base_ms + 2000, RunStatus::timeout, "node", "node:22", "claude-code", "/work/apple",
      124);
  add("d", k_base_ms + k_day_ms, RunStatus::ok, "sh", "busybox", "cursor", "/tmp", 0);
  add("e", k_base_ms + k_day_ms + 1, RunStatus::oom, "python", "python:3.12", "codex", "/work",
      137);
  store.begin_run(sample_run("f", k_base_ms + 2 * k_day_ms, RunStatus::running));
  return db;
}

std::string ids_matching(const fs::path& db, const std::map<std::string, std::string>& options,
                         int64_t limit = 0) {
  Store store = Store::open(StoreOptions{db, std::chrono::seconds(5), true});
  Filter filter = build_filter(Subject::runs, options, k_base_ms + 3 * k_day_ms);
  CollectingWriter writer;
  query_runs(store.database(), filter, Order::oldest_first, limit, writer);
  std::string ids;
  for (const auto& row : writer.rows) {
    ids += row["run_id"].get<std::string>();
  }
  return ids;
}

}  // namespace

TEST_CASE("time specs: ISO-8601 forms and relative ages", "[audit][query][time]") {
  CHECK(parse_iso8601_ms("2024-05-01") == 1714521600000);
  CHECK(parse_iso8601_ms("2024-05-01T08:00") == k_base_ms);
  CHECK(parse_iso8601_ms("2024-05-01 08:00:00") == k_base_ms);
  CHECK(parse_iso8601_ms("2024-05-01T08:00:00Z") == k_base_ms);
  CHECK(parse_iso8601_ms("2024-05-01T08:00:00.25Z") == k_base_ms + 250);
  CHECK(parse_iso8601_ms("2024-05-01T10:00:00+02:00") == k_base_ms);
  CHECK(parse_iso8601_ms("2024-05-01T03:00:00-0500") == k_base_ms);
  CHECK(parse_iso8601_ms("2024-05-01T09:00:00+01") == k_base_ms);
  for (const char* bad : {"", "2024", "2024-13-01", "2024-02-30", "2024-05-01T25:00",
                          "2024-05-01T08:00:00Q", "2024-05-01T08", "yesterday", "2024-05-01x"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_iso8601_ms(bad));
  }
  CHECK(parse_age_ms("90s") == 90000);
  CHECK(parse_age_ms("30m") == 1800000);
  CHECK(parse_age_ms("2h") == 7200000);
  CHECK(parse_age_ms("7d") == 7 * k_day_ms);
  CHECK(parse_age_ms("1w") == 7 * k_day_ms);
  CHECK(parse_age_ms("1.5h") == 5400000);
  for (const char* bad : {"", "h", "2", "-2h", "0d", "2y", "2 h", "1e30d"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_age_ms(bad));
  }
  CHECK(parse_time_spec("2h", k_base_ms, "since") == k_base_ms - 7200000);
  CHECK(parse_time_spec("2024-05-01T08:00Z", 0, "since") == k_base_ms);
}

TEST_CASE("a bad time spec is a usage error naming the option", "[audit][query][time]") {
  CHECK(usage_error([] { parse_time_spec("last tuesday", 0, "since"); }) ==
        "bad time \"last tuesday\" for --since: expected an ISO-8601 time (2024-05-01, "
        "2024-05-01T12:30:00Z) or an age (30m, 2h, 7d)");
}

TEST_CASE("times are printed as UTC ISO-8601 with milliseconds", "[audit][query][time]") {
  CHECK(format_iso8601_ms(k_base_ms + 7) == "2024-05-01T08:00:00.007Z");
  CHECK(format_iso8601_ms(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_day(k_base_ms) == "2024-05-01");
  CHECK(parse_iso8601_ms(format_iso8601_ms(k_base_ms + 123456)) == k_base_ms + 123456);
}

TEST_CASE("filters select runs by every option", "[audit][query]") {
  TempDir dir;
  fs::path db = varied_runs(dir);
  CHECK(ids_matching(db, {}) == "abcdef");
  CHECK(ids_matching(db, {{"since", "2024-05-02"}}) == "def");
  CHECK(ids_matching(db, {{"until", "2024-05-02"}}) == "abc");
  CHECK(ids_matching(db, {{"since", "2d"}}) == "def");
  CHECK(ids_matching(db, {{"status", "ok,oom"}}) == "ade");
  CHECK(ids_matching(db, {{"status", "running"}}) == "f");
  CHECK(ids_matching(db, {{"command", "python"}}) == "abef");
  CHECK(ids_matching(db, {{"command", "n*"}}) == "c");
  CHECK(ids_matching(db, {{"image", "python:*"}}) == "abef");
  CHECK(ids_matching(db, {{"exit-code", "137"}}) == "e");
  CHECK(ids_matching(db, {{"agent", "codex"}}) == "be");
  CHECK(ids_matching(db, {{"session", "cursor-session"}}) == "d");
  CHECK(ids_matching(db, {{"tool-use", "toolu_c"}}) == "c");
  CHECK(ids_matching(db, {{"cwd", "/work/app"}}) == "abf");
  CHECK(ids_matching(db, {{"cwd", "/work/app/"}}) == "abf");
  CHECK(ids_matching(db, {{"cwd", "/"}}) == "abcdef");
  CHECK(ids_matching(db, {{"agent", "codex"}, {"status", "oom"}}) == "e");
  CHECK(ids_matching(db, {}, 2) == "ab");
}

TEST_CASE("bad filter values are usage errors that list the choices", "[audit][query]") {
  CHECK(usage_error([] {
          build_filter(Subject::runs, {{"status", "ok,bogus"}}, 0);
        }) ==
        "bad value \"bogus\" for --status: expected one of running, ok, error, timeout, oom, "
        "killed, refused, engine_error, abandoned");
  CHECK(usage_error([] {
          build_filter(Subject::runs, {{"status", ","}}, 0);
        }) ==
        "bad value \",\" for --status: expected one of running, ok, error, timeout, oom, killed, "
        "refused, engine_error, abandoned");
  CHECK(usage_error([] {
          build_filter(Subject::decisions, {{"decision", "maybe"}}, 0);
        }) == "bad value \"maybe\" for --decision: expected one of allow, deny, ask, rewrite");
  CHECK(usage_error([] {
          build_filter(Subject::runs, {{"exit-code", "1x"}}, 0);
        }) == "bad value \"1x\" for --exit-code: expected an integer");
  CHECK_THAT(usage_error([] {
               build_filter(Subject::runs, {{"until", "soon"}}, 0);
             }),
             Contains("bad time \"soon\" for --until"));
}

TEST_CASE("filters that do not apply to a table are ignored there", "[audit][query]") {
  Filter filter = build_filter(Subject::decisions, {{"image", "x"}, {"agent", "codex"}}, 0);
  CHECK(filter.where == "1 AND agent GLOB ?");
  CHECK(filter.params.size() == 1);
}

TEST_CASE("list orders newest first and gives every documented field", "[audit][query]") {
  TempDir dir;
  fs::path db = varied_runs(dir);
  Store store = Store::open(StoreOptions{db, std::chrono::seconds(5), true});
  CollectingWriter writer;
  CHECK(query_runs(store.database(), Filter{}, Order::newest_first, 3, writer) == 3);
  REQUIRE(writer.rows.size() == 3);
  CHECK(writer.rows[0]["run_id"] == "f");
  CHECK(writer.rows[2]["run_id"] == "d");
  std::vector<std::string> keys;
  for (const auto& item : writer.rows[1].items()) {
    keys.push_back(item.key());
  }
  CHECK(keys == run_fields());
  const Row& e = writer.rows[1];
  CHECK(e["start"] == "2024-05-02T08:00:00.001Z");
  CHECK(e["argv"] == Row::array({"python", "-c", "print('hi')"}));
  CHECK(e["argv_hex"].is_null());
  CHECK(e["warm"] == false);
  CHECK(e["duration_ms"] == 250);
  CHECK(writer.rows[0]["end"].is_null());
}

TEST_CASE("show finds a run by id or unique prefix, with its decisions", "[audit][query]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  add_run(store, sample_run("3f2a9c01"));
  add_run(store, sample_run("3f2b0000"));
  add_run(store, sample_run("3f2b0000x"));
  DecisionRecord decision = sample_decision("toolu_3f2a9c01", Decision::rewrite);
  store.record_decision(decision);
  CHECK((*find_run(store.database(), "3f2a9c01"))["run_id"] == "3f2a9c01");
  Row run = *find_run(store.database(), "3f2a");
  CHECK(run["run_id"] == "3f2a9c01");
  CHECK(run["decisions"].size() == 1);
  CHECK(run["decisions"][0]["decision"] == "rewrite");
  CHECK((*find_run(store.database(), "3f2b0000"))["run_id"] == "3f2b0000");
  CHECK_FALSE(find_run(store.database(), "nothing"));
  CHECK(usage_error([&] { find_run(store.database(), "3f2b"); }) ==
        "run id prefix \"3f2b\" matches several runs; fix: give more of the id");
}

TEST_CASE("stats count by group and give nearest-rank percentiles", "[audit][query][stats]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  for (int i = 1; i <= 100; ++i) {
    RunRecord record = sample_run("r" + std::to_string(i), k_base_ms + (i > 60 ? k_day_ms : 0) + i,
                                  i % 10 == 0 ? RunStatus::error : RunStatus::ok);
    record.end_ms = record.start_ms + int64_t{i} * 10;
    record.invoked_as = i % 4 == 0 ? "node" : "python";
    add_run(store, record);
  }
  store.begin_run(sample_run("running", k_base_ms));
  Stats stats = compute_stats(store.database(), Filter{});
  CHECK(stats.runs == 101);
  REQUIRE(stats.groups.size() == 4);
  CHECK(stats.groups[0].first == "status");
  CHECK(stats.groups[0].second ==
        std::vector<std::pair<std::string, int64_t>>{{"ok", 90}, {"error", 10}, {"running", 1}});
  CHECK(stats.groups[1].second ==
        std::vector<std::pair<std::string, int64_t>>{{"python", 76}, {"node", 25}});
  CHECK(stats.duration.count == 100);
  CHECK(stats.duration.p50 == 500);
  CHECK(stats.duration.p95 == 950);
  CHECK(stats.duration.max == 1000);

  Row json = stats_json(stats);
  CHECK(json["by_status"]["error"] == 10);
  CHECK(json["duration_ms"]["p95"] == 950);
  CHECK(stats_rows(stats).front() == Row{{"group", "runs"}, {"key", ""}, {"value", 101}});

  auto days = compute_daily_stats(store.database(), Filter{});
  REQUIRE(days.size() == 2);
  CHECK(days[0].day == "2024-05-01");
  CHECK(days[0].runs == 61);
  CHECK(days[0].by_status.at("error") == 6);
  CHECK(days[0].duration.max == 600);
  CHECK(days[1].runs == 40);
  CHECK(days[1].duration.p50 == 800);
  Row day = day_row(days[1]);
  CHECK(day["ok"] == 36);
  CHECK(day["abandoned"] == 0);
}

TEST_CASE("stats on no rows are zeros", "[audit][query][stats]") {
  TempDir dir;
  Store store = open_test_store(dir / "audit.db");
  Stats stats = compute_stats(store.database(), Filter{});
  CHECK(stats.runs == 0);
  CHECK(stats.duration.count == 0);
  CHECK(compute_daily_stats(store.database(), Filter{}).empty());
}

TEST_CASE("stats from the trigger-kept counts agree with counting the runs",
          "[audit][query][stats]") {
  TempDir dir;
  fs::path db = varied_runs(dir);
  {
    Store store = open_test_store(db);
    RunRecord changed = sample_run("g", k_base_ms + 5);
    store.begin_run(changed);
    changed.image = "late:image";  // completion may name what begin did not know
    changed.status = RunStatus::killed;
    store.complete_run(changed);
    RunRecord dead = sample_run("h", k_base_ms + 6);
    dead.pid = 999999;
    store.begin_run(dead);
    store.mark_abandoned_runs();
    prune_chain(store.database(), k_base_ms + 1500, k_base_ms, false);
  }
  Store store = Store::open(StoreOptions{db, std::chrono::seconds(5), true});
  Filter everything = build_filter(Subject::runs, {{"since", "1970-01-01"}}, 0);
  REQUIRE_FALSE(everything.is_empty());
  Stats from_counts = compute_stats(store.database(), Filter{});
  Stats from_runs = compute_stats(store.database(), everything);
  CHECK(from_counts.runs == query_int(db, "SELECT count(*) FROM runs"));
  CHECK(from_counts.runs == from_runs.runs);
  CHECK(from_counts.groups == from_runs.groups);
  CHECK(from_counts.duration.count == from_runs.duration.count);
  CHECK(from_counts.duration.p50 == from_runs.duration.p50);
  CHECK(from_counts.duration.p95 == from_runs.duration.p95);
  CHECK(from_counts.duration.max == from_runs.duration.max);
  auto days_from_counts = compute_daily_stats(store.database(), Filter{});
  auto days_from_runs = compute_daily_stats(store.database(), everything);
  REQUIRE(days_from_counts.size() == days_from_runs.size());
  for (size_t i = 0; i < days_from_counts.size(); ++i) {
    CHECK(day_row(days_from_counts[i]) == day_row(days_from_runs[i]));
  }
}
