#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "audit/chain.hpp"
#include "audit/encoding.hpp"
#include "audit/query.hpp"
#include "audit/schema.hpp"
#include "audit/sqlite.hpp"
#include "common/error.hpp"
#include "common/process.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;
using Catch::Matchers::Contains;

namespace {

const auto me = static_cast<uint32_t>(::getuid());

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Store failures are sandbox errors: the shim fails closed with exit 125.
std::string store_failure(const std::function<void()>& body) {
  return fatal_message(body, 125);
}

// A database file that a test can damage or lock.
fs::path database_with_one_run(const TempDir& dir) {
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  add_run(store, sample_run("r1"));
  return db;
}

}  // namespace

TEST_CASE("open creates the directory with mode 700, the file with mode 600, in WAL mode",
          "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "state" / "sandshim" / "audit.db";
  Store store = open_test_store(db);
  CHECK(mode_of(dir / "state") == 0700);
  CHECK(mode_of(dir / "state" / "sandshim") == 0700);
  CHECK(mode_of(db) == 0600);
  CHECK(query_text(db, "PRAGMA journal_mode") == "wal");
  CHECK(query_int(db, "PRAGMA user_version") == k_schema_version);
}

TEST_CASE("a run is inserted as running, then completed and chained", "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  RunRecord record = sample_run("r1");
  store.begin_run(record);
  CHECK(query_text(db, "SELECT status FROM runs") == "running");
  CHECK(query_text(db, "SELECT quote(chain_seq) || quote(end_ms) FROM runs") == "NULLNULL");

  record.status = RunStatus::error;
  record.exit_code = 3;
  record.stderr_tail = "boom\n";
  store.complete_run(record);
  CHECK(query_text(db, "SELECT status || ' ' || exit_code || ' ' || duration_ms FROM runs") ==
        "error 3 250");
  CHECK(query_int(db, "SELECT chain_seq FROM runs") == 1);
  CHECK(query_text(db, "SELECT length(row_hash) FROM runs") == "64");
  CHECK(query_int(db, "SELECT count(*) FROM runs") == 1);
}

TEST_CASE("a refused run is one complete row in one step", "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  RunRecord refused = sample_run("r1", 1714550400000, RunStatus::refused);
  refused.exit_code = 125;
  refused.message = "network access is not allowed by the policy";
  store.record_finished(refused);
  CHECK(query_text(db, "SELECT status || ':' || chain_seq || ':' || message FROM runs") ==
        "refused:1:network access is not allowed by the policy");
}

TEST_CASE("completing a run that is not running fails closed", "[audit][store]") {
  TempDir dir;
  Store store = open_test_store(dir / "audit.db");
  CHECK_THAT(store_failure([&] { store.complete_run(sample_run("ghost")); }),
             Contains("cannot complete run \"ghost\": no such run was begun"));
  add_run(store, sample_run("r1"));
  CHECK_THAT(store_failure([&] { store.complete_run(sample_run("r1")); }),
             Contains("cannot complete run \"r1\": its status is already ok"));
}

TEST_CASE("argv keeps its exact bytes, invalid UTF-8 included", "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  RunRecord record = sample_run("r1");
  record.argv = {"python", "-c", "print('\xff\xfe')", "", "caf\xc3\xa9", "a b\n"};
  add_run(store, record);
  std::string raw = query_text(db, "SELECT hex(argv_raw) FROM runs");
  std::string expected_hex;
  for (char c : pack_args(record.argv)) {
    static constexpr char k_digits[] = "0123456789ABCDEF";
    expected_hex += k_digits[static_cast<unsigned char>(c) >> 4];
    expected_hex += k_digits[static_cast<unsigned char>(c) & 0xf];
  }
  CHECK(raw == expected_hex);
  CHECK(unpack_args(pack_args(record.argv)) == record.argv);
  CHECK(query_text(db, "SELECT json_valid(argv) FROM runs") == "1");
  CHECK(query_text(db, "SELECT json_extract(argv, '$[2]') FROM runs") ==
        "print('\xEF\xBF\xBD\xEF\xBF\xBD')");
  CHECK(query_text(db, "SELECT json_extract(argv, '$[4]') FROM runs") == "caf\xc3\xa9");
}

TEST_CASE("an empty file (schema 0) is given the current schema", "[audit][store][schema]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  write_bytes(db, "");
  Store store = open_test_store(db);
  CHECK(query_int(db, "PRAGMA user_version") == k_schema_version);
  CHECK(query_int(db,
                  "SELECT count(*) FROM sqlite_master WHERE name IN ('runs', 'decisions', "
                  "'chain_state')") == 3);
}

TEST_CASE("a version 1 file is migrated forward with its rows intact", "[audit][store][schema]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  execute_sql(db, read_bytes(fs::path(SANDSHIM_TEST_DATA_DIR) / "audit" / "schema_v1.sql"));
  REQUIRE(query_int(db, "PRAGMA user_version") == 1);
  Store store = open_test_store(db);
  CHECK(query_int(db, "PRAGMA user_version") == k_schema_version);
  CHECK(query_text(db, "SELECT run_id || ' ' || status FROM runs") == "v1run ok");
  CHECK(query_int(db, "SELECT count(*) FROM decisions") == 0);
  CHECK(verify_chain(store.database()).ok);
  add_run(store, sample_run("r2"));
  CHECK(verify_chain(store.database()).links_checked == 2);
}

// The counts a database keeps by status, as `SELECT status, runs` lines.
std::string run_counts_by_status(const fs::path& db) {
  return query_text(
      db,
      "SELECT group_concat(status || '=' || n, ' ') FROM (SELECT status, sum(runs) AS "
      "n FROM run_counts GROUP BY status ORDER BY status)");
}

TEST_CASE("a version 7 file with rows is migrated to 8 in place, its chain intact",
          "[audit][store][schema]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  execute_sql(db, read_bytes(fs::path(SANDSHIM_TEST_DATA_DIR) / "audit" / "schema_v7.sql"));
  REQUIRE(query_int(db, "PRAGMA user_version") == 7);
  REQUIRE(run_counts_by_status(db) == "ok=2 refused=1 running=1");
  Store store = open_test_store(db);
  CHECK(query_int(db, "PRAGMA user_version") == k_schema_version);
  // Schema 8 counts finished runs only; the running one is still there, and stats still see it.
  CHECK(run_counts_by_status(db) == "ok=2 refused=1");
  CHECK(query_text(db, "SELECT status FROM runs WHERE run_id = 'v7running'") == "running");
  Stats before = compute_stats(store.database(), Filter{});
  CHECK(before.runs == 4);
  CHECK(before.groups[0].second ==
        std::vector<std::pair<std::string, int64_t>>{{"ok", 2}, {"refused", 1}, {"running", 1}});
  VerifyResult migrated = verify_chain(store.database());
  CHECK(migrated.ok);
  CHECK(migrated.links_checked == 3);
  // The run that v7 began completes under v8 and joins the chain; a new run follows it.
  RunRecord begun = sample_run("v7running");
  store.complete_run(begun);
  add_run(store, sample_run("v8run"));
  CHECK(run_counts_by_status(db) == "ok=4 refused=1");
  VerifyResult after = verify_chain(store.database());
  CHECK(after.ok);
  CHECK(after.links_checked == 5);
  CHECK(compute_stats(store.database(), Filter{}).runs == 5);
  // Still a chain that notices tampering: edit the migrated row and verify says which.
  execute_sql(db, "UPDATE runs SET argv = '[\"python\",\"-c\",\"pass\"]' WHERE run_id = 'gen-1'");
  VerifyResult edited = verify_chain(store.database());
  CHECK_FALSE(edited.ok);
  CHECK(edited.fault == ChainFault::changed);
}

TEST_CASE("schema 8: a running row costs run_counts nothing until it finishes, then one count",
          "[audit][store][schema]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  store.begin_run(sample_run("r1"));
  CHECK(query_int(db, "SELECT count(*) FROM run_counts") == 0);
  CHECK(compute_stats(store.database(), Filter{}).groups[0].second ==
        std::vector<std::pair<std::string, int64_t>>{{"running", 1}});
  store.complete_run(sample_run("r1"));
  CHECK(run_counts_by_status(db) == "ok=1");
  // A run abandoned by its shim is counted under its new status; deleting it uncounts it.
  RunRecord dead = sample_run("r2");
  store.begin_run(dead);
  CHECK(store.mark_abandoned_runs([](const ShimProcess&) { return false; }) == 1);
  CHECK(run_counts_by_status(db) == "abandoned=1 ok=1");
  CHECK(verify_chain(store.database()).ok);
  store.begin_run(sample_run("r3"));
  execute_sql(db, "DELETE FROM runs WHERE run_id = 'r3'");
  CHECK(run_counts_by_status(db) == "abandoned=1 ok=1");
  execute_sql(db, "DELETE FROM runs WHERE run_id = 'r2'");
  CHECK(run_counts_by_status(db) == "abandoned=0 ok=1");
}

TEST_CASE("migrate stops at the target version and can resume", "[audit][schema]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  write_bytes(db, "");
  Database connection(db, OpenMode::read_write, std::chrono::milliseconds(1000));
  migrate(connection, 1);
  CHECK(schema_version(connection) == 1);
  CHECK(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'decisions'") == 0);
  migrate(connection);
  CHECK(schema_version(connection) == k_schema_version);
}

TEST_CASE("a schema newer than this build is refused and the file is untouched",
          "[audit][store][schema]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  execute_sql(db, "PRAGMA user_version = 99");
  std::string before = read_bytes(db);
  std::string expected = "audit database \"" + db.string() +
                         "\": cannot use it: schema version 99 was written by a newer sandshim "
                         "(this one knows up to " +
                         std::to_string(k_schema_version) +
                         "); fix: upgrade sandshim, or set SANDSHIM_AUDIT_DB to another file";
  CHECK(store_failure([&] { open_test_store(db); }) == expected);
  CHECK(store_failure([&] {
          Store::open(StoreOptions{db, std::chrono::seconds(1), true});
        }) == expected);
  CHECK(read_bytes(db) == before);
}

TEST_CASE("a corrupt file is refused and never overwritten", "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  std::string garbage(8192, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<char>((i * 7919) % 251);
  }
  SECTION("random bytes") {
    write_bytes(db, garbage);
  }
  SECTION("a text file") {
    write_bytes(db, "this is not a database\n");
  }
  SECTION("a database with a damaged header") {
    database_with_one_run(dir);
    execute_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)");  // or the WAL's copy of page 1 hides it
    std::string bytes = read_bytes(db);
    bytes.replace(0, 16, "SQLite format 2\0", 16);
    write_bytes(db, bytes);
  }
  std::string before = read_bytes(db);
  std::string message = store_failure([&] { open_test_store(db); });
  CHECK_THAT(message, Contains("audit database \"" + db.string() + "\": cannot"));
  CHECK_THAT(message, Contains("file is not a database"));
  CHECK_THAT(message, Contains("fix: the file was left untouched: move it aside"));
  CHECK(message.find('\n') == std::string::npos);
  CHECK(read_bytes(db) == before);
  store_failure([&] { Store::open(StoreOptions{db, std::chrono::seconds(1), true}); });
  CHECK(read_bytes(db) == before);
}

TEST_CASE("an unreadable file is refused with exit 125", "[audit][store][permissions]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  fs::permissions(dir.path(), fs::perms::all);
  fs::permissions(db, fs::perms::none);
  ChildResult child = run_in_child([&] { open_test_store(db); }, true);
  CHECK(child.code == 125);
  CHECK_THAT(child.message, Contains("audit database \"" + db.string() + "\": cannot open it: "));
  CHECK_THAT(child.message, Contains("fix: make " + dir.path().string()));
}

TEST_CASE("a read-only file is refused for writing with exit 125", "[audit][store][permissions]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  fs::permissions(dir.path(), fs::perms::all);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  std::string before = read_bytes(db);
  ChildResult child = run_in_child([&] { open_test_store(db); }, true);
  CHECK(child.code == 125);
  CHECK_THAT(child.message, Contains("cannot open it for writing: the file is read-only"));
  CHECK_THAT(child.message, Contains("fix: give uid"));
  CHECK(read_bytes(db) == before);
}

TEST_CASE("a directory the user cannot write is refused with exit 125",
          "[audit][store][permissions]") {
  TempDir dir;
  fs::create_directory(dir / "locked");
  fs::permissions(dir.path(), fs::perms::all);
  fs::permissions(dir / "locked", fs::perms::owner_all | fs::perms::group_read |
                                      fs::perms::group_exec | fs::perms::others_read |
                                      fs::perms::others_exec);
  fs::path db = dir / "locked" / "audit.db";
  ChildResult child = run_in_child([&] { open_test_store(db); }, true);
  CHECK(child.code == 125);
  CHECK_THAT(child.message, Contains("audit database \"" + db.string() + "\": cannot create"));
  CHECK_FALSE(fs::exists(db));
}

TEST_CASE("a database locked longer than the busy timeout fails closed", "[audit][store]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  Database holder(db, OpenMode::read_write, std::chrono::milliseconds(100));
  Transaction lock(holder, Transaction::Mode::immediate);
  Store store = open_test_store(db, std::chrono::milliseconds(100));
  std::string message = store_failure([&] { store.begin_run(sample_run("r2")); });
  CHECK_THAT(message, Contains("database is locked"));
  CHECK_THAT(message, Contains("longer than the busy timeout (100 ms)"));
}

TEST_CASE("checkpoint folds the WAL into the file, so a plain copy is complete", "[audit][store]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  CHECK(fs::file_size(db.string() + "-wal") > 0);  // writers leave it for speed
  Store store = open_test_store(db);
  store.checkpoint();
  CHECK(fs::file_size(db.string() + "-wal") == 0);
  fs::copy_file(db, dir / "copy.db");
  CHECK(query_int(dir / "copy.db", "SELECT count(*) FROM runs") == 1);
}

TEST_CASE("a WAL past its threshold is folded by a connection of its own", "[audit][store]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  {
    Store store = open_test_store(db);
    CHECK_FALSE(store.wal_needs_folding());  // one run: far below the threshold
    for (int i = 0; store.wal_needs_folding() == false && i < 500; ++i) {
      store.begin_run(sample_run("grow-" + std::to_string(i)));
    }
    REQUIRE(store.wal_needs_folding());
  }
  fold_wal_of(db);
  CHECK(fs::file_size(db.string() + "-wal") == 0);
  fs::copy_file(db, dir / "copy.db");
  CHECK(query_int(dir / "copy.db", "SELECT count(*) FROM runs") > 1);
  fold_wal_of(dir / "missing.db");  // nothing to fold: no file appears, nothing throws
  CHECK_FALSE(fs::exists(dir / "missing.db"));
}

TEST_CASE("the store's files are close-on-exec", "[audit][store]") {
  TempDir dir;
  fs::path db = database_with_one_run(dir);
  Store store = open_test_store(db);
  store.begin_run(sample_run("r2"));
  int checked = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    fs::path target = fs::read_symlink(entry.path(), ec);
    if (!ec && target.string().rfind(db.string(), 0) == 0) {
      int fd = std::stoi(entry.path().filename().string());
      CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
      ++checked;
    }
  }
  CHECK(checked >= 1);
}

TEST_CASE("the chain hashes every column of each table", "[audit][chain][schema]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  open_test_store(db);
  for (const ChainTable* table : {&k_run_chain, &k_decision_chain}) {
    std::string columns =
        query_text(db, "SELECT group_concat(name, ', ') FROM pragma_table_info('" +
                           std::string(table->table) + "') WHERE name NOT IN ('id', 'row_hash')");
    std::string keyed =
        table->keyed_columns.empty() ? "" : ", " + std::string(table->keyed_columns);
    CHECK(columns == std::string(table->hashed_columns) + keyed);
  }
}

TEST_CASE("runs whose shim died are marked abandoned, on this host only", "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  RunRecord alive = sample_run("alive");
  RunRecord dead = sample_run("dead");
  dead.pid = 999999;
  RunRecord elsewhere = sample_run("elsewhere");
  elsewhere.host = "another-host";
  elsewhere.pid = 999999;
  for (const auto& record : {alive, dead, elsewhere}) {
    store.begin_run(record);
  }
  auto is_alive = [](const ShimProcess& shim) { return shim.pid != 999999; };
  CHECK(store.mark_abandoned_runs(is_alive) == 1);
  CHECK(query_text(db,
                   "SELECT group_concat(run_id || '=' || status, ' ') FROM (SELECT * FROM "
                   "runs ORDER BY run_id)") == "alive=running dead=abandoned elsewhere=running");
  CHECK_THAT(query_text(db, "SELECT message FROM runs WHERE run_id = 'dead'"),
             Contains("the shim (pid 999999) ended without completing the run"));
  CHECK(query_text(db, "SELECT quote(end_ms) FROM runs WHERE run_id = 'dead'") == "NULL");
  CHECK(store.mark_abandoned_runs(is_alive) == 0);
  CHECK(verify_chain(store.database()).ok);
}

TEST_CASE("the default liveness check tells a live shim from a dead one or a reused pid",
          "[audit][store]") {
  auto ticks = process_start_ticks(::getpid());
  REQUIRE(ticks);
  ShimProcess self{::getpid(), *ticks, current_boot_id()};
  CHECK(self.boot_id.size() == 36);
  CHECK(shim_is_alive(self));
  CHECK_FALSE(shim_is_alive(ShimProcess{self.pid, self.start_ticks + 1, self.boot_id}));
  CHECK_FALSE(shim_is_alive(ShimProcess{self.pid, self.start_ticks, "another-boot"}));
  pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  ::waitpid(child, nullptr, 0);
  CHECK_FALSE(shim_is_alive(ShimProcess{child, 0, ""}));
  CHECK_FALSE(shim_is_alive(ShimProcess{0, 0, ""}));
}

TEST_CASE("begin_run notes which process the shim is", "[audit][store]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  store.begin_run(sample_run("r1"));
  CHECK(query_text(db, "SELECT boot_id FROM runs") == current_boot_id());
  CHECK(query_int(db, "SELECT pid_start_ticks FROM runs") == *process_start_ticks(::getpid()));
  CHECK(store.mark_abandoned_runs() == 0);
}

TEST_CASE("hook decisions are recorded, completed and chained", "[audit][store][decisions]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);

  std::string allowed = store.record_decision(sample_decision("toolu_1", Decision::allow));
  CHECK(allowed.size() == 24);
  CHECK(query_text(db, "SELECT quote(chain_seq) FROM decisions") == "NULL");

  DecisionCompletion completion{"session-1", "ran", 2, 1714550401000, "Traceback...\n"};
  CHECK(store.complete_decision("toolu_1", completion, me));
  CHECK(query_text(db,
                   "SELECT exit_code || ' ' || completed_ms || ' ' || chain_seq FROM "
                   "decisions") == "2 1714550401000 1");
  CHECK_FALSE(store.complete_decision("toolu_1", completion, me));  // already sealed
  CHECK_FALSE(store.complete_decision("toolu_unknown", completion, me));
  CHECK_FALSE(store.complete_decision("", completion, me));

  store.record_decision(sample_decision("toolu_2", Decision::deny));
  CHECK(query_int(db, "SELECT chain_seq FROM decisions WHERE tool_use_id = 'toolu_2'") == 2);

  DecisionRecord named = sample_decision("toolu_3", Decision::rewrite);
  named.decision_id = "given-id";
  CHECK(store.record_decision(named) == "given-id");
  CHECK_FALSE(
      store.complete_decision("toolu_3", DecisionCompletion{"other-session", "ran", 0, 0, ""}, me));

  add_run(store, sample_run("r1"));
  CHECK(verify_chain(store.database()).links_checked == 3);
}

TEST_CASE("a run finds its pending decision by its command; with a uid, only that user's",
          "[audit][store][decisions]") {
  TempDir dir;
  Store store = open_test_store(dir / "audit.db");
  const std::string command = "python -c 'print(1)'";
  DecisionRecord theirs = sample_decision("toolu_theirs", Decision::allow, 1000);
  theirs.uid = me + 1;
  store.record_decision(theirs);
  CHECK(store.pending_tool_use_id("claude-code", "session-1", command) == "toolu_theirs");
  CHECK(store.pending_tool_use_id("claude-code", "session-1", command, me).empty());
  DecisionRecord mine = sample_decision("toolu_mine", Decision::allow, 900);
  mine.uid = me;
  store.record_decision(mine);
  CHECK(store.pending_tool_use_id("claude-code", "session-1", command, me) == "toolu_mine");
  CHECK(store.pending_tool_use_id("claude-code", "session-1", command, me + 1) == "toolu_theirs");
  CHECK(store.pending_tool_use_id("claude-code", "session-2", command, me).empty());
  CHECK(store.pending_tool_use_id("claude-code", "session-1", "ls", me).empty());
}

TEST_CASE("decisions that never complete are sealed after a while", "[audit][store][decisions]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  int64_t now = sandshim::wall_clock_ms();
  store.record_decision(sample_decision("old", Decision::ask, now - 7200000));
  store.record_decision(sample_decision("recent", Decision::allow, now));
  CHECK(store.seal_pending_decisions(std::chrono::hours(1)) == 1);
  CHECK(query_text(db, "SELECT tool_use_id FROM decisions WHERE chain_seq IS NOT NULL") == "old");
  CHECK(verify_chain(store.database()).ok);
}

TEST_CASE("a decision records what the agent was sent, its mode and whether the command ran",
          "[audit][store][decisions]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  DecisionRecord rewritten = sample_decision("toolu_9", Decision::rewrite);
  rewritten.answer = "allow+updatedInput";
  rewritten.permission_mode = "acceptEdits";
  store.record_decision(rewritten);
  RunRecord run = sample_run("r9");
  run.tool_use_id = "toolu_9";
  run.exit_code = 43;
  run.uid = me;
  add_run(store, run);
  // Codex's post-event has no exit code: the joined run's is used.
  CHECK(store.complete_decision("toolu_9", DecisionCompletion{"", "ran", std::nullopt, 5, ""}, me));
  CHECK(query_text(db,
                   "SELECT answer || ' ' || permission_mode || ' ' || outcome || ' ' || "
                   "exit_code FROM decisions WHERE tool_use_id = 'toolu_9'") ==
        "allow+updatedInput acceptEdits ran 43");

  store.record_decision(sample_decision("toolu_10", Decision::allow));
  CHECK(store.complete_decision("toolu_10", DecisionCompletion{"", "ran", 0, 6, ""}, me));
  CHECK(query_int(db, "SELECT exit_code FROM decisions WHERE tool_use_id = 'toolu_10'") == 0);

  store.record_decision(sample_decision("toolu_11", Decision::allow));
  CHECK(store.complete_decision("toolu_11", DecisionCompletion{"", "not-run", std::nullopt, 7, ""},
                                me));
  CHECK(query_text(db,
                   "SELECT outcome || ' ' || quote(exit_code) FROM decisions WHERE "
                   "tool_use_id = 'toolu_11'") == "not-run NULL");
  CHECK(verify_chain(store.database()).ok);
}

TEST_CASE("gc closes a decision no post-event completed: not run unless a run joins it",
          "[audit][store][decisions]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  int64_t old = sandshim::wall_clock_ms() - 7200000;
  store.record_decision(sample_decision("refused", Decision::allow, old));
  store.record_decision(sample_decision("ran", Decision::rewrite, old));
  RunRecord run = sample_run("r1");
  run.tool_use_id = "ran";
  run.exit_code = 44;
  add_run(store, run);
  CHECK(store.seal_pending_decisions(std::chrono::hours(1)) == 2);
  CHECK(query_text(db,
                   "SELECT group_concat(tool_use_id || '=' || outcome || '/' || "
                   "quote(exit_code), ' ') FROM (SELECT * FROM decisions ORDER BY id)") ==
        "refused=not-run/NULL ran=ran/44");
  CHECK(verify_chain(store.database()).ok);
}

TEST_CASE("a decision is completed only by its own uid", "[audit][store][decisions]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  DecisionRecord alices = sample_decision("toolu_a", Decision::allow);
  alices.uid = 1001;
  store.record_decision(alices);
  DecisionCompletion completion{"", "ran", 0, 9, "forged"};
  CHECK_FALSE(store.complete_decision("toolu_a", completion, 1002));
  CHECK(query_text(db, "SELECT quote(completed_ms) || ' ' || quote(chain_seq) FROM decisions") ==
        "NULL NULL");
  CHECK(store.complete_decision("toolu_a", completion, 1001));
  CHECK(query_text(db, "SELECT completed_ms || ' ' || tool_response_tail FROM decisions") ==
        "9 forged");
}

TEST_CASE("the end of a turn closes its session's pending decisions, the caller's own only",
          "[audit][store][decisions]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  DecisionRecord refused = sample_decision("refused", Decision::allow);
  refused.uid = me;
  store.record_decision(refused);
  DecisionRecord other_session = sample_decision("elsewhere", Decision::allow);
  other_session.session_id = "session-2";
  other_session.uid = me;
  store.record_decision(other_session);
  DecisionRecord other_user = sample_decision("theirs", Decision::allow);
  other_user.uid = me + 1;
  store.record_decision(other_user);
  DecisionRecord other_agent = sample_decision("codex's", Decision::allow);
  other_agent.agent = "codex";
  other_agent.uid = me;
  store.record_decision(other_agent);
  CHECK(store.close_session_decisions("claude-code", "", me) == 0);
  CHECK(store.close_session_decisions("", "session-1", me) == 0);
  CHECK(store.close_session_decisions("claude-code", "session-1", me) == 1);
  CHECK(query_text(db,
                   "SELECT group_concat(tool_use_id || '=' || coalesce(outcome, '-'), ' ') "
                   "FROM (SELECT * FROM decisions ORDER BY id)") ==
        "refused=not-run elsewhere=- theirs=- codex's=-");
  CHECK(store.close_session_decisions("claude-code", "session-1", me) == 0);      // sealed already
  CHECK(store.close_session_decisions("claude-code", "session-1", me + 1) == 1);  // their own
  CHECK(verify_chain(store.database()).ok);
}
