#include <cstdlib>

#include <catch2/catch.hpp>

#include "audit/output.hpp"
#include "audit/query.hpp"
#include "common/strings.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr int64_t k_base_ms = 1714550400000;

fs::path three_runs(const TempDir& dir, const std::string& name = "audit.db") {
  fs::path db = dir / name;
  Store store = open_test_store(db);
  add_run(store, sample_run("aaa111", k_base_ms));
  add_run(store, sample_run("bbb222", k_base_ms + 1000, RunStatus::error));
  RunRecord odd = sample_run("ccc333", k_base_ms + 2000);
  odd.argv = {"python", "\xff"};
  odd.stderr_tail = "warning: \x1b[31mred\n";
  add_run(store, odd);
  store.record_decision(sample_decision("toolu_bbb222", Decision::deny));
  return db;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { ::unsetenv(m_name); }

 private:
  const char* m_name;
};

}  // namespace

TEST_CASE("audit --help lists every command; each command teaches with examples",
          "[audit][commands]") {
  TempDir dir;
  CommandResult overview = run_audit({"--help"}, dir / "none.db");
  CHECK(overview.code == 0);
  CHECK_THAT(overview.out, StartsWith("usage: sandshim audit COMMAND [options]"));
  for (const char* command :
       {"list", "show", "stats", "export", "verify", "prune", "sql", "decisions"}) {
    CAPTURE(command);
    CHECK_THAT(overview.out, Contains(std::string("  ") + command + " "));
    CommandResult help = run_audit({command, "--help"}, dir / "none.db");
    CHECK(help.code == 0);
    CHECK_THAT(help.out, StartsWith(std::string("usage: sandshim audit ") + command));
    CHECK_THAT(help.out, Contains("Examples:\n  sandshim audit " + std::string(command)));
    CHECK(run_audit({"help", command}, dir / "none.db").out == help.out);
  }
  CHECK_FALSE(fs::exists(dir / "none.db"));
}

TEST_CASE("bad usage exits 2 with one line", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  auto check_usage = [&](std::vector<std::string> args, const std::string& message) {
    CAPTURE(args);
    CommandResult result = run_audit(args, db);
    CHECK(result.code == 2);
    CHECK(result.error == message);
  };
  check_usage({}, "missing command; see `sandshim audit --help`");
  check_usage({"lsit"}, "unknown audit command \"lsit\"; see `sandshim audit --help`");
  check_usage({"list", "--bogus"},
              "unrecognised option '--bogus'; see `sandshim audit list --help`");
  check_usage({"list", "--limit", "many"},
              "the argument ('many') for option '--limit' is invalid; see `sandshim audit list "
              "--help`");
  check_usage({"show"}, "sandshim audit show needs ID; see `sandshim audit show --help`");
  check_usage({"prune"}, "prune needs --older-than (for example --older-than 30d)");
  check_usage({"stats", "--by", "week"}, "bad value \"week\" for --by: expected day");
  check_usage({"list", "--status", "fine"},
              "bad value \"fine\" for --status: expected one of running, ok, error, timeout, oom, "
              "killed, refused, engine_error, abandoned");
}

TEST_CASE("list: a table on a terminal, JSON lines when piped, or the format asked for",
          "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult table = run_audit({"list"}, db, true);
  CHECK(table.code == 0);
  CHECK_THAT(table.out, StartsWith("RUN     START (UTC)          TOOK   STATUS  EXIT  AGENT"));
  CHECK_THAT(table.out, Contains("ccc333  2024-05-01 08:00:02  250ms  ok      0     claude-code  "
                                 "python:3.12-slim  python '\xEF\xBF\xBD'"));

  CommandResult lines = run_audit({"list"}, db, false);
  auto first = Row::parse(lines.out.substr(0, lines.out.find('\n')));
  CHECK(first["run_id"] == "ccc333");
  CHECK(first["argv_hex"] == Row::array({"707974686f6e", "ff"}));

  CommandResult json = run_audit({"list", "--json", "--status", "error"}, db, true);
  auto parsed = Row::parse(json.out);
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0]["run_id"] == "bbb222");

  CommandResult csv = run_audit({"list", "--csv", "--limit", "1"}, db, true);
  CHECK_THAT(csv.out, StartsWith(sandshim::join(run_fields(), ",") + "\nccc333,ok,"));
}

TEST_CASE("export writes every run oldest first as JSON lines", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult result = run_audit({"export"}, db, true);
  CHECK(result.code == 0);
  CHECK(std::count(result.out.begin(), result.out.end(), '\n') == 3);
  CHECK_THAT(result.out, StartsWith("{\"run_id\":\"aaa111\""));
}

TEST_CASE("show prints everything about one run, tails escaped", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult table = run_audit({"show", "ccc"}, db, true);
  CHECK(table.code == 0);
  CHECK_THAT(table.out, StartsWith("run_id          ccc333\nstatus          ok\n"));
  CHECK_THAT(table.out, Contains("stderr_tail (of 0 bytes in all):\nwarning: \\x1b[31mred\n"));

  CommandResult json = run_audit({"show", "bbb222", "--json"}, db);
  auto run = Row::parse(json.out);
  CHECK(run["status"] == "error");
  CHECK(run["decisions"][0]["decision"] == "deny");

  CommandResult missing = run_audit({"show", "zzz"}, db);
  CHECK(missing.code == 1);
  CHECK(missing.error == "no run matches \"zzz\"; see `sandshim audit list`");
}

TEST_CASE("stats prints counts and percentiles in every format", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult json = run_audit({"stats", "--json"}, db);
  auto stats = Row::parse(json.out);
  CHECK(stats["runs"] == 3);
  CHECK(stats["by_status"]["error"] == 1);
  CHECK(stats["duration_ms"]["p50"] == 250);
  CommandResult table = run_audit({"stats"}, db, true);
  CHECK_THAT(
      table.out,
      StartsWith("group        key               value\nruns                           3\n"));
  CommandResult days = run_audit({"stats", "--by", "day", "--csv"}, db);
  CHECK_THAT(days.out, StartsWith("day,runs,running,ok,error,"));
  CHECK_THAT(days.out, Contains("\n2024-05-01,3,0,2,1,"));
}

TEST_CASE("verify exits 0 when intact and 1 naming the edited row", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult ok = run_audit({"verify"}, db);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, StartsWith("ok: 4 rows verified; chain head 4 sha256:"));
  execute_sql(db, "UPDATE runs SET exit_code = 0 WHERE run_id = 'bbb222'");
  CommandResult failed = run_audit({"verify"}, db);
  CHECK(failed.code == 1);
  CHECK_THAT(failed.out, StartsWith("FAILED (changed): run \"bbb222\" (chain position 2) was "
                                    "changed after it was recorded: its hash does not match "
                                    "(expected "));
  CHECK(Row::parse(run_audit({"verify", "--json"}, db).out)["ok"] == false);
}

TEST_CASE("prune from the command line keeps verify passing", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult dry =
      run_audit({"prune", "--older-than", "2024-05-01T08:00:01.100Z", "--dry-run"}, db);
  CHECK(dry.out ==
        "would prune 1 runs and 0 decisions finished before 2024-05-01T08:00:01.100Z; the chain "
        "starts after position 1\n");
  CHECK(query_int(db, "SELECT count(*) FROM runs") == 3);
  CHECK(run_audit({"prune", "--older-than", "1d"}, db).code == 0);
  CHECK(run_audit({"prune", "--older-than", "1d"}, dir / "missing.db").code == 125);
  CHECK_FALSE(fs::exists(dir / "missing.db"));
  CHECK(query_int(db, "SELECT count(*) FROM runs") == 0);
  CommandResult verified = run_audit({"verify"}, db);
  CHECK(verified.code == 0);
  CHECK_THAT(verified.out, Contains("it starts after position 4, pruned on "));
}

TEST_CASE("sql runs one read-only statement", "[audit][commands][sql]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult counted = run_audit(
      {"sql", "SELECT status, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1", "--csv"}, db);
  CHECK(counted.code == 0);
  CHECK(counted.out == "status,n\nerror,1\nok,2\n");
  CommandResult json_each = run_audit(
      {"sql", "SELECT run_id FROM runs, json_each(runs.argv) AS a WHERE a.value = 'print(''hi'')'",
       "--jsonl"},
      db);
  CHECK(json_each.out == "{\"run_id\":\"aaa111\"}\n{\"run_id\":\"bbb222\"}\n");
}

TEST_CASE("sql refuses writes and bad SQL, and leaves the file unchanged",
          "[audit][commands][sql]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  execute_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  std::string before = read_bytes(db);
  for (const char* write : {"DELETE FROM runs", "UPDATE runs SET status = 'ok'",
                            "INSERT INTO chain_state VALUES (2, 0, '', 0, '', NULL)",
                            "DROP TABLE runs", "CREATE TABLE x (y)", "PRAGMA user_version = 7",
                            "VACUUM", "REPLACE INTO runs (id) VALUES (1)"}) {
    CAPTURE(write);
    CommandResult result = run_audit({"sql", write}, db);
    CHECK(result.code == 2);
    CHECK_THAT(result.error, StartsWith("refused SQL: `sandshim audit sql` only reads") ||
                                 StartsWith("bad SQL: "));
  }
  CHECK(run_audit({"sql", "SELEC 1"}, db).error == "bad SQL: near \"SELEC\": syntax error");
  CHECK(run_audit({"sql", "SELECT nope FROM runs"}, db).error == "bad SQL: no such column: nope");
  CHECK(run_audit({"sql", "SELECT 1; DELETE FROM runs"}, db).error ==
        "bad SQL: give one statement at a time");
  CHECK(read_bytes(db) == before);
  CHECK(fs::file_size(db.string() + "-wal") == 0);
  CHECK(query_int(db, "SELECT count(*) FROM runs") == 3);
}

TEST_CASE("decisions lists hook decisions", "[audit][commands]") {
  TempDir dir;
  fs::path db = three_runs(dir);
  CommandResult table = run_audit({"decisions", "--decision", "deny"}, db, true);
  CHECK(table.code == 0);
  CHECK_THAT(table.out, StartsWith("TIME (UTC)           DECISION  AGENT"));
  CHECK_THAT(table.out, Contains("deny      claude-code  toolu_bbb222"));
  CHECK(run_audit({"decisions", "--decision", "allow", "--json"}, db).out == "[]\n");
}

TEST_CASE("the database: --db, then SANDSHIM_AUDIT_DB, then the policy's, then the default",
          "[audit][commands]") {
  TempDir dir;
  fs::path configured = three_runs(dir, "configured.db");
  fs::path from_env = dir / "env.db";
  {
    Store store = open_test_store(from_env);
    add_run(store, sample_run("env-run"));
  }
  auto first_id = [](const CommandResult& result) {
    return Row::parse(result.out.substr(0, result.out.find('\n')))["run_id"];
  };
  CHECK(first_id(run_audit({"list"}, configured)) == "ccc333");
  ScopedEnv env("SANDSHIM_AUDIT_DB", from_env.string());
  CHECK(first_id(run_audit({"list"}, configured)) == "env-run");
  CHECK(first_id(run_audit({"list", "--db", configured.string()}, "")) == "ccc333");
  CHECK(first_id(run_audit({"--db", configured.string(), "list"}, "")) == "ccc333");
  CHECK(first_id(run_audit({"--db=" + configured.string(), "list"}, "")) == "ccc333");
  ScopedEnv state("XDG_STATE_HOME", (dir / "state").string());
  ::unsetenv("SANDSHIM_AUDIT_DB");
  CommandResult fallback = run_audit({"list"}, "");
  CHECK(fallback.code == 125);
  CHECK_THAT(fallback.error,
             StartsWith("audit database \"" + (dir / "state" / "sandshim" / "audit.db").string() +
                        "\": cannot read it: it does not exist"));
  CHECK_FALSE(fs::exists(dir / "state"));
}

TEST_CASE("audit tables are coloured on a terminal only, and never with NO_COLOR or TERM=dumb",
          "[audit][commands][terminal]") {
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    WARN("script(1) is not installed (bsdutils): the pty case is not checked");
    return;
  }
  TempDir dir;
  fs::path db = three_runs(dir);
  // script(1) gives the binary a pseudo-terminal; its output comes back through a file.
  auto on_pty = [&](const std::string& env) {
    fs::path out = dir / "pty.out";
    std::string list = std::string(SANDSHIM_BINARY) + " audit list --db " + db.string();
    std::string command = "env -u NO_COLOR " + env + " script -qec '" + list + "' /dev/null > " +
                          out.string() + " 2>&1";
    CHECK(std::system(command.c_str()) == 0);
    return read_bytes(out);
  };
  std::string painted = on_pty("TERM=xterm");
  CHECK_THAT(painted, Contains("\x1b[1mRUN\x1b[0m"));
  CHECK_THAT(painted, Contains("\x1b[32mok\x1b[0m"));
  CHECK_THAT(painted, Contains("\x1b[31merror\x1b[0m"));
  CHECK_THAT(on_pty("TERM=xterm NO_COLOR=1"), !Contains("\x1b["));
  CHECK_THAT(on_pty("TERM=dumb"), !Contains("\x1b["));
  // Escapes never shift a column: without them the table is the plain one, byte for byte.
  std::string plain = on_pty("TERM=xterm NO_COLOR=1");
  std::string stripped;
  for (size_t i = 0; i < painted.size(); ++i) {
    if (painted[i] == '\x1b') {
      i = painted.find('m', i);
    } else {
      stripped += painted[i];
    }
  }
  CHECK(stripped == plain);
  // Piped: no terminal, no colour, even when asked for a table.
  CommandResult piped = run_audit({"list", "--table"}, db, false);
  CHECK_THAT(piped.out, !Contains("\x1b["));
}
