// One audit for a fleet: two hosts' keyed stores exported as fleet records, merged, verified
// host by host, queried like a database, and every tamper of the merged file named with its host
// and position (an edit, a dropped row, two swapped rows, a cut-off tail, a moved head).

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit/chain.hpp"
#include "audit/commands.hpp"
#include "audit/fleet_export.hpp"
#include "audit/fleet_verify.hpp"
#include "common/strings.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t k_base_ms = 1714550400000;

// One broker's files: its database and key, with `runs` runs and a denied decision after each
// second one; run 2's argv and tails carry control bytes and invalid UTF-8.
struct Host {
  std::string name;
  TempDir dir;
  fs::path db = dir / "audit.db";
  fs::path key_file = dir / (name + ".key");
  ChainKey key;

  Host(std::string host, int runs)
      : name(std::move(host)), key(load_or_create_chain_key(key_file)) {
    StoreOptions options{db, std::chrono::seconds(5), false};
    options.key = key;
    Store store = Store::open(options);
    for (int i = 1; i <= runs; ++i) {
      RunRecord run = sample_run(name + "-r" + std::to_string(i), k_base_ms + i * 1000);
      run.host = name;
      if (i == 2) {
        run.argv = {"python", "-c", "print('\x1b[31mred\n')", std::string("\xff\xfe", 2)};
        run.stderr_tail = "line\r\n\x1b]0;title\x07\x9b";
      }
      add_run(store, run);
      if (i % 2 == 0) {
        store.record_decision(sample_decision("toolu_" + name + "-r" + std::to_string(i),
                                              Decision::deny, k_base_ms + i * 1000 + 10));
      }
    }
  }

  std::string export_text(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"export", "--format", "fleet", "--hostname", name};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult result = run_audit(args, db);
    REQUIRE(result.code == 0);
    return result.out;
  }
};

// Two exports interleaved line by line, as a collector that receives both streams writes them.
std::vector<std::string> interleaved(const std::string& a, const std::string& b) {
  auto left = sandshim::split_lines(a);
  auto right = sandshim::split_lines(b);
  std::vector<std::string> merged;
  for (size_t i = 0; i < std::max(left.size(), right.size()); ++i) {
    if (i < left.size()) {
      merged.push_back(left[i]);
    }
    if (i < right.size()) {
      merged.push_back(right[i]);
    }
  }
  return merged;
}

fs::path write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  write_bytes(file, sandshim::join(lines, "\n") + "\n");
  return file;
}

// Index of the line that is `host`'s row at chain position `seq`.
size_t row_line(const std::vector<std::string>& lines, const std::string& host, int64_t seq);

// The lines without `host`'s row at `seq`.
std::vector<std::string> without(std::vector<std::string> lines, const std::string& host,
                                 int64_t seq) {
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(row_line(lines, host, seq)));
  return lines;
}

size_t row_line(const std::vector<std::string>& lines, const std::string& host, int64_t seq) {
  for (size_t i = 0; i < lines.size(); ++i) {
    auto json = nlohmann::json::parse(lines[i]);
    if (json["record"] == "row" && json["host"] == host && json["seq"] == seq) {
      return i;
    }
  }
  FAIL("no row " << seq << " of " << host);
  return 0;
}

struct Fleet {
  Host alpha{"alpha", 6};
  Host beta{"beta", 4};
  TempDir dir;
  std::vector<std::string> merged = interleaved(alpha.export_text(), beta.export_text());

  CommandResult verify(const std::vector<std::string>& lines, bool json = false) const {
    fs::path file = write_lines(dir / "merged.jsonl", lines);
    std::vector<std::string> args = {"verify",
                                     "--export",
                                     file.string(),
                                     "--key",
                                     "alpha=" + alpha.key_file.string(),
                                     "--key",
                                     "beta=" + beta.key_file.string()};
    if (json) {
      args.emplace_back("--json");
    }
    return run_audit(args, dir / "unused.db");
  }

  // The faults verify --json reports, as "host fault seq".
  std::vector<std::string> faults(const std::vector<std::string>& lines) const {
    CommandResult result = verify(lines, true);
    INFO(result.out << result.error);
    CHECK(result.code == 1);
    std::vector<std::string> found;
    auto report = nlohmann::json::parse(result.out);
    for (const auto& host : report["hosts"]) {
      for (const auto& fault : host["faults"]) {
        found.push_back(host["host"].get<std::string>() + " " + fault["fault"].get<std::string>() +
                        " " + std::to_string(fault["seq"].get<int64_t>()));
      }
    }
    return found;
  }
};

using Faults = std::vector<std::string>;

}  // namespace

TEST_CASE("fleet export: values keep their SQLite type and bytes", "[audit][fleet]") {
  const std::vector<SqlValue> values = {SqlValue(),
                                        SqlValue(int64_t{-42}),
                                        SqlValue(1.5),
                                        SqlValue(std::string("plain \"text\"\n\x1b")),
                                        SqlValue(std::string("bad \xff utf-8\\")),
                                        SqlValue(Blob{std::string("\0\x01\xff tail\n", 9)})};
  for (const auto& value : values) {
    Row json = encode_value(value);
    std::string text = to_json_text(json);
    for (unsigned char c : text) {
      CHECK((c >= 0x20 && c != 0x7f));  // no raw control byte in a record
    }
    CHECK(decode_value(Row::parse(text)) == value);
  }
  CHECK_FALSE(decode_value(Row::parse(R"({"blob":"\\x4"})")));
  CHECK_FALSE(decode_value(Row::parse(R"({"text":"a","blob":"b"})")));
  CHECK_FALSE(decode_value(Row::parse("[1]")));
}

TEST_CASE("fleet export: begin, head, then every link with its hash and host", "[audit][fleet]") {
  Host host("alpha", 4);
  auto lines = sandshim::split_lines(host.export_text());
  REQUIRE(lines.size() == 2 + 6);  // begin, head, 4 runs and 2 decisions
  auto begin = nlohmann::json::parse(lines[0]);
  auto head = nlohmann::json::parse(lines[1]);
  CHECK(begin["record"] == "begin");
  CHECK(begin["after_seq"] == 0);
  CHECK(head["record"] == "head");
  CHECK(head["head_seq"] == 6);
  CHECK(head["key_id"] == host.key.id());
  int64_t seq = 0;
  for (size_t i = 2; i < lines.size(); ++i) {
    auto row = nlohmann::json::parse(lines[i]);
    CHECK(row["host"] == "alpha");
    CHECK(row["seq"] == ++seq);
    CHECK(row["columns"]["chain_seq"] == seq);
    CHECK(row["row_hash"].get<std::string>().size() == 64);
  }
  for (unsigned char c : host.export_text()) {
    CHECK((c == '\n' || (c >= 0x20 && c != 0x7f)));
  }
  // --after: an incremental export starts after a position the collector already holds
  auto later = sandshim::split_lines(host.export_text({"--after", "4"}));
  CHECK(later.size() == 2 + 2);
  CHECK(nlohmann::json::parse(later[0])["after_seq"] == 4);
  CHECK(run_audit({"export", "--follow"}, host.db).code == 2);  // needs --format
  CHECK(run_audit({"export", "--format", "fleet", "--after", "-1"}, host.db).code == 2);
  CHECK(run_audit({"export", "--format", "fleet", "--after", "99"}, host.db).code == 2);
  CHECK(run_audit({"export", "--format", "xml"}, host.db).code == 2);
  CHECK(run_audit({"export", "--format", "fleet", "--since", "1d"}, host.db).code == 2);
  CHECK(run_audit({"export", "--format", "fleet", "--syslog", "--output", "x"}, host.db).code == 2);
}

TEST_CASE("fleet export: a later pass writes only the head and the new links", "[audit][fleet]") {
  Host host("alpha", 2);
  auto db = std::make_unique<Database>(host.db, OpenMode::read_only, std::chrono::seconds(5));
  std::ostringstream out;
  auto sink = stream_sink(out);
  ExportPlan plan{"alpha", ExportFormat::fleet, -1};
  int64_t exported = export_pass(*db, plan, -1, *sink);
  CHECK(exported == 3);
  size_t first = sandshim::split_lines(out.str()).size();
  CHECK(export_pass(*db, plan, exported, *sink) == 3);  // nothing new: nothing written
  CHECK(sandshim::split_lines(out.str()).size() == first);
  {
    StoreOptions options{host.db, std::chrono::seconds(5), false};
    options.key = host.key;
    Store store = Store::open(options);
    add_run(store, sample_run("alpha-r3", k_base_ms + 9000));
  }
  CHECK(export_pass(*db, plan, exported, *sink) == 4);
  auto lines = sandshim::split_lines(out.str());
  CHECK(lines.size() == first + 2);
  CHECK(nlohmann::json::parse(lines[first])["head_seq"] == 4);
}

TEST_CASE("fleet verify: two hosts' merged exports verify host by host", "[audit][fleet]") {
  Fleet fleet;
  CommandResult result = fleet.verify(fleet.merged);
  CHECK(result.code == 0);
  CHECK_THAT(result.out, Contains("host alpha (chain "));
  CHECK_THAT(result.out, Contains("9 rows, positions 1 to 9, head 9, keyed: ok"));
  CHECK_THAT(result.out, Contains("6 rows, positions 1 to 6, head 6, keyed: ok"));
  CHECK_THAT(result.out, Contains("ok: 2 hosts, 0 faults"));
  // concatenated, and with a second overlapping export of alpha: the same
  auto concatenated = sandshim::split_lines(fleet.alpha.export_text() + fleet.beta.export_text() +
                                            fleet.alpha.export_text({"--after", "5"}));
  CHECK(fleet.verify(concatenated).code == 0);
  // a key directory of HOST.key files serves as well
  TempDir keys;
  fs::copy_file(fleet.alpha.key_file, keys / "alpha.key");
  fs::copy_file(fleet.beta.key_file, keys / "beta.key");
  fs::path file = write_lines(fleet.dir / "m.jsonl", fleet.merged);
  CHECK(run_audit({"verify", "--export", file.string(), "--key-dir", keys.path().string()},
                  fleet.dir / "unused.db")
            .code == 0);
}

TEST_CASE("fleet verify: an edited row is a MAC mismatch at its host and position",
          "[audit][fleet]") {
  Fleet fleet;
  auto lines = fleet.merged;
  size_t at = row_line(lines, "alpha", 4);
  auto row = nlohmann::json::parse(lines[at]);
  row["columns"]["exit_code"] = 0 == row["columns"]["exit_code"] ? 1 : 0;
  lines[at] = row.dump();
  CHECK(fleet.faults(lines) == Faults{"alpha changed 4"});
  CommandResult text = fleet.verify(lines);
  CHECK_THAT(text.out, Contains("FAILED (changed) host alpha position 4 at "));
  CHECK_THAT(text.out, Contains("its HMAC does not match"));
}

TEST_CASE("fleet verify: a dropped row is a gap", "[audit][fleet]") {
  Fleet fleet;
  auto lines = without(fleet.merged, "beta", 3);
  CHECK(fleet.faults(lines) == Faults{"beta gap 3"});
  CHECK_THAT(fleet.verify(lines).out, Contains("positions 3 to 3 are missing before position 4"));
}

TEST_CASE("fleet verify: two swapped rows are a reordering", "[audit][fleet]") {
  Fleet fleet;
  auto lines = fleet.merged;
  std::swap(lines[row_line(lines, "alpha", 2)], lines[row_line(lines, "alpha", 3)]);
  CHECK(fleet.faults(lines) == Faults{"alpha reordered 2"});
}

TEST_CASE("fleet verify: a cut-off tail shows against the last head", "[audit][fleet]") {
  Fleet fleet;
  auto lines = without(without(fleet.merged, "alpha", 9), "alpha", 8);
  CHECK(fleet.faults(lines) == Faults{"alpha truncated 8"});
  CHECK_THAT(fleet.verify(lines).out, Contains("rows 8 to 9 were cut off"));
}

TEST_CASE("fleet verify: a head moved back fails its HMAC", "[audit][fleet]") {
  Fleet fleet;
  auto lines = fleet.merged;
  for (auto& line : lines) {
    auto json = nlohmann::json::parse(line);
    if (json["record"] == "head" && json["host"] == "beta") {
      json["head_seq"] = 5;
      line = json.dump();
    }
  }
  CHECK(fleet.faults(without(lines, "beta", 6)) ==
        Faults{"beta head_edited 5", "beta rechained 5"});
}

TEST_CASE("fleet verify: without a host's key, or with another, it says so", "[audit][fleet]") {
  Fleet fleet;
  fs::path file = write_lines(fleet.dir / "m.jsonl", fleet.merged);
  CommandResult no_key = run_audit(
      {"verify", "--export", file.string(), "--key", "alpha=" + fleet.alpha.key_file.string()},
      fleet.dir / "unused.db");
  CHECK(no_key.code == 1);
  CHECK_THAT(no_key.out, Contains("FAILED (no_key) host beta"));
  CommandResult wrong = run_audit(
      {"verify", "--export", file.string(), "--key", "alpha=" + fleet.beta.key_file.string(),
       "--key", "beta=" + fleet.beta.key_file.string()},
      fleet.dir / "unused.db");
  CHECK(wrong.code == 1);
  CHECK_THAT(wrong.out, Contains("FAILED (wrong_key) host alpha"));
  CHECK(
      run_audit({"verify", "--export", file.string(), "--key", "alpha"}, fleet.dir / "u.db").code ==
      2);
}

TEST_CASE("fleet verify: a line no exporter wrote is named by file and line", "[audit][fleet]") {
  TempDir dir;
  for (const std::string& junk :
       {std::string("not json"), std::string(R"({"record":"row","host":"a","chain_id":"c"})"),
        std::string(R"({"class_uid":1007})"),
        std::string(R"({"record":"head","host":"a","chain_id":"c","head_seq":"1"})")}) {
    fs::path file = write_lines(dir / "bad.jsonl", {junk});
    CommandResult result = run_audit({"verify", "--export", file.string()}, dir / "u.db");
    CHECK(result.code == 2);
    CHECK_THAT(result.error, Contains("bad.jsonl:1"));
  }
}

TEST_CASE("fleet queries: list, show, stats, decisions and sql read a merged export",
          "[audit][fleet]") {
  Fleet fleet;
  fs::path file = write_lines(fleet.dir / "m.jsonl", fleet.merged);
  fs::path unused = fleet.dir / "unused.db";
  CommandResult list = run_audit({"list", "--export", file.string(), "--json"}, unused);
  REQUIRE(list.code == 0);
  auto runs = nlohmann::json::parse(list.out);
  CHECK(runs.size() == 10);
  CHECK(runs[0]["run_id"] == "alpha-r6");  // newest first across both hosts
  CommandResult beta = run_audit(
      {"list", "--export", file.string(), "--json", "--host", "beta", "--limit", "0"}, unused);
  CHECK(nlohmann::json::parse(beta.out).size() == 4);
  CommandResult show = run_audit({"show", "beta-r2", "--export", file.string(), "--json"}, unused);
  REQUIRE(show.code == 0);
  auto shown = nlohmann::json::parse(show.out);
  CHECK(shown["argv_hex"].is_array());  // the exact bytes came through the export
  CHECK(shown["stderr_tail"].get<std::string>().find("\x1b]0;title") != std::string::npos);
  CHECK(shown["decisions"].size() == 1);
  CommandResult stats = run_audit({"stats", "--export", file.string(), "--json"}, unused);
  CHECK(nlohmann::json::parse(stats.out)["runs"] == 10);
  CommandResult decisions = run_audit({"decisions", "--export", file.string(), "--json"}, unused);
  CHECK(nlohmann::json::parse(decisions.out).size() == 5);
  CommandResult sql = run_audit({"sql", "SELECT host, count(*) AS n FROM runs GROUP BY host",
                                 "--export", file.string(), "--csv"},
                                unused);
  CHECK(sql.out == "host,n\nalpha,6\nbeta,4\n");
  CommandResult table = run_audit({"list", "--export", file.string(), "--table"}, unused, true);
  for (unsigned char c : table.out) {
    CHECK((c == '\n' || (c >= 0x20 && c != 0x7f)));
  }
  CHECK_FALSE(fs::exists(unused));
}

TEST_CASE("fleet export: OCSF events for runs and decisions", "[audit][fleet]") {
  Host host("alpha", 2);
  CommandResult result = run_audit({"export", "--format", "ocsf", "--hostname", "alpha"}, host.db);
  REQUIRE(result.code == 0);
  auto lines = sandshim::split_lines(result.out);
  REQUIRE(lines.size() == 3);
  auto run = nlohmann::json::parse(lines[0]);
  CHECK(run["class_uid"] == 1007);
  CHECK(run["type_uid"] == 100701);
  CHECK(run["device"]["hostname"] == "alpha");
  CHECK(run["process"]["cmd_line"] == "python -c 'print('\\''hi'\\'')'");
  CHECK(run["status_id"] == 1);
  CHECK(run["unmapped"]["chain_seq"] == 1);
  auto decision = nlohmann::json::parse(lines[2]);
  CHECK(decision["class_uid"] == 6003);
  CHECK(decision["disposition_id"] == 2);
  fs::path file = host.dir / "ocsf.jsonl";
  write_bytes(file, result.out);
  CHECK(run_audit({"verify", "--export", file.string()}, host.dir / "u.db").code == 2);
}

TEST_CASE("fleet: files and feeds are the caller's, never the broker's", "[audit][fleet]") {
  CHECK(runs_as_caller({"verify", "--export", "a.jsonl"}));
  CHECK(runs_as_caller({"export", "--format", "fleet", "--output=x"}));
  CHECK(runs_as_caller({"export", "--syslog"}));
  CHECK_FALSE(runs_as_caller({"export", "--format", "fleet"}));
  CHECK_FALSE(runs_as_caller({"list", "--since", "1d"}));
}

TEST_CASE("fleet export: to a collector's unix socket, one record a line", "[audit][fleet]") {
  Host host("alpha", 2);
  fs::path path = host.dir / "collector.sock";
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  CommandResult result = run_audit(
      {"export", "--format", "fleet", "--hostname", "alpha", "--socket", path.string()}, host.db);
  CHECK(result.code == 0);
  CHECK(result.out.empty());
  int connection = ::accept(listener, nullptr, nullptr);
  REQUIRE(connection >= 0);
  std::string received;
  char buffer[4096];
  for (ssize_t n; (n = ::read(connection, buffer, sizeof buffer)) > 0;) {
    received.append(buffer, static_cast<size_t>(n));
  }
  ::close(connection);
  ::close(listener);
  auto lines = sandshim::split_lines(received);
  REQUIRE(lines.size() == 2 + 3);
  CHECK(nlohmann::json::parse(lines[1])["head_seq"] == 3);
  fs::remove(path);
  CommandResult refused =
      run_audit({"export", "--format", "fleet", "--socket", path.string()}, host.db);
  CHECK(refused.code == 125);
  CHECK_THAT(refused.error, Contains("connect failed"));
}

TEST_CASE("fleet verify: a keyed host re-hashed without its key, or an unknown host, fails",
          "[audit][fleet]") {
  Fleet fleet;
  auto lines = fleet.merged;
  std::erase_if(lines, [](const std::string& line) {
    auto json = nlohmann::json::parse(line);
    return json["record"] == "head" && json["host"] == "beta";
  });
  auto faults = fleet.faults(lines);  // and each HMAC link fails as a SHA-256 one
  REQUIRE(faults.size() == 7);
  CHECK(faults[0] == "beta unkeyed 0");
  CHECK(faults[6] == "beta changed 6");
  Host gamma("gamma", 1);
  TempDir unkeyed;
  {
    Store store = open_test_store(unkeyed / "audit.db");
    add_run(store, sample_run("gamma-r1"));
  }
  auto with_gamma = fleet.merged;
  for (const auto& line : sandshim::split_lines(
           run_audit({"export", "--format", "fleet", "--hostname", "gamma"}, unkeyed / "audit.db")
               .out)) {
    with_gamma.push_back(line);
  }
  CHECK(fleet.faults(with_gamma) == Faults{"gamma unknown_host 0"});
}
