// The audit's integrity against someone who can write the database file: a keyed chain
// (HMAC-SHA256), a sealed chain_state row, and an anchor log of chain heads. Each tamper kind is
// shown verifying before and failing precisely after.

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "audit/chain.hpp"
#include "audit/commands.hpp"
#include "audit/schema.hpp"
#include "audit/sqlite.hpp"
#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "skip.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr int64_t k_hour_ms = 3600000;
constexpr int64_t k_base_ms = 1714550400000;

// The broker's files: a database, its key and a root-owned anchor log.
struct Audit {
  TempDir dir;
  fs::path db = dir / "audit.db";
  fs::path key_file = dir / "audit.key";
  fs::path anchor = dir / "anchor";
  bool keyed;
  std::optional<ChainKey> key;

  explicit Audit(bool with_key = true) : keyed(with_key) {
    write_bytes(anchor, "");
    ::chmod(anchor.c_str(), 0660);
    if (keyed) {
      key = load_or_create_chain_key(key_file);
    }
  }

  Store writer(bool anchored = true) const {
    StoreOptions options{db, std::chrono::seconds(5), false};
    options.key = key;
    options.anchor_file = anchored ? anchor : fs::path();
    return Store::open(options);
  }

  // r1..r`count`, an hour apart.
  void add_runs(int count, int first = 1) const {
    Store store = writer();
    for (int i = first; i < first + count; ++i) {
      add_run(store, sample_run("r" + std::to_string(i), k_base_ms + i * k_hour_ms));
    }
  }

  VerifyResult verify(bool with_key = true, bool with_anchor = true) const {
    Store store = Store::open(StoreOptions{db, std::chrono::seconds(5), true});
    VerifyOptions options;
    options.key = with_key && key ? &*key : nullptr;
    options.anchor_file = with_anchor ? anchor : fs::path();
    return verify_chain(store.database(), options);
  }
};

// The anchor log must be root-owned: as another user these tests are skipped, and counted.
bool as_root() {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("the anchor log must be root-owned; run the unit tests as root");
    return false;
  }
  return true;
}

// The documented v1 (unkeyed) link hash of the current row (its first column is the rowid).
std::string attacker_hash(sqlite3_stmt* row) {
  return documented_row_hash(row, "run", 1);
}

// Recomputes every link from position `from` on, then the head: re-chaining with sqlite3.
void rechain_from(const fs::path& db, int64_t from) {
  std::string previous =
      query_text(db, "SELECT COALESCE((SELECT row_hash FROM runs WHERE chain_seq = " +
                         std::to_string(from - 1) + "), printf('%.64d', 0))");
  int64_t last = query_int(db, "SELECT max(chain_seq) FROM runs");
  for (int64_t seq = from; seq <= last; ++seq) {
    execute_sql(db, "UPDATE runs SET prev_hash = '" + previous +
                        "' WHERE chain_seq = " + std::to_string(seq));
    sqlite3* handle = nullptr;
    sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* row = nullptr;
    std::string sql = "SELECT id, " + std::string(k_run_chain.hashed_columns) +
                      " FROM runs WHERE chain_seq = " + std::to_string(seq);
    sqlite3_prepare_v2(handle, sql.c_str(), -1, &row, nullptr);
    REQUIRE(sqlite3_step(row) == SQLITE_ROW);
    previous = attacker_hash(row);
    sqlite3_finalize(row);
    sqlite3_close_v2(handle);
    execute_sql(db, "UPDATE runs SET row_hash = '" + previous +
                        "' WHERE chain_seq = " + std::to_string(seq));
  }
  execute_sql(db, "UPDATE chain_state SET head_hash = '" + previous + "'");
}

// When the anchor log's line `line` was written, as verify prints it.
std::string anchor_time(const fs::path& anchor, int line) {
  for (const auto& entry : read_anchor_file(anchor).entries) {
    if (entry.line == line) {
      return format_iso8601_ms(entry.time_ms);
    }
  }
  FAIL("no anchor entry on line " << line);
  return "";
}

std::string hash_of(const fs::path& db, const std::string& run_id) {
  return query_text(db, "SELECT row_hash FROM runs WHERE run_id = '" + run_id + "'");
}

}  // namespace

TEST_CASE("a keyed chain: HMAC links, a 0400 key made on first use, only its key verifies",
          "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit;
  struct stat st {};
  REQUIRE(::stat(audit.key_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0400);
  CHECK(load_or_create_chain_key(audit.key_file).id() == audit.key->id());
  audit.add_runs(3);
  VerifyResult ok = audit.verify();
  CHECK(ok.ok);
  CHECK(ok.links_checked == 3);
  CHECK(ok.state.keyed());
  CHECK(ok.anchored_heads == 3);
  CHECK_THAT(ok.assurance, StartsWith("keyed (HMAC-SHA256, key " + audit.key->id() +
                                      ") from position 1; 3 heads anchored in "));

  VerifyResult no_key = audit.verify(false);
  CHECK(no_key.fault == ChainFault::no_key);
  ChainKey other{std::string(32, 'x')};
  Store reader = Store::open(StoreOptions{audit.db, std::chrono::seconds(5), true});
  VerifyOptions wrong;
  wrong.key = &other;
  CHECK(verify_chain(reader.database(), wrong).fault == ChainFault::wrong_key);
  CHECK_THAT(fatal_message(
                 [&] {
                   Store::open(StoreOptions{audit.db, std::chrono::seconds(5), false});
                 },
                 125),
             Contains("its chain is keyed (the broker's)"));
  ::chmod(audit.key_file.c_str(), 0440);
  CHECK_THAT(fatal_message([&] { load_or_create_chain_key(audit.key_file); }, 125),
             Contains("with mode 0440"));
}

TEST_CASE("tamper: a deleted row is named with the positions that are missing",
          "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  for (bool keyed : {true, false}) {
    INFO("keyed " << keyed);
    Audit audit(keyed);
    audit.add_runs(5);
    REQUIRE(audit.verify().ok);
    execute_sql(audit.db, "DELETE FROM runs WHERE run_id = 'r3'");
    VerifyResult result = audit.verify();
    CHECK(result.fault == ChainFault::deleted);
    CHECK_THAT(result.problem, StartsWith("chain positions 3 to 3 are missing before run \"r4\": "
                                          "rows were deleted (expected position 3, found 4)"));
  }
}

TEST_CASE("tamper: truncation with the head moved back is caught by the anchor log and the key",
          "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  for (bool keyed : {true, false}) {
    INFO("keyed " << keyed);
    Audit audit(keyed);
    audit.add_runs(5);
    REQUIRE(audit.verify().ok);
    execute_sql(audit.db, "DELETE FROM runs WHERE chain_seq > 3");
    execute_sql(audit.db, "UPDATE chain_state SET head_seq = 3, head_hash = '" +
                              hash_of(audit.db, "r3") + "'");
    VerifyResult anchored = audit.verify();
    CHECK(anchored.fault == ChainFault::truncated);
    CHECK_THAT(anchored.problem, StartsWith("the anchor log recorded chain position 5 (") &&
                                     Contains("line 6, ") &&
                                     Contains(") but the chain ends at position 3: rows 4 to 5 "
                                              "were deleted (truncated)"));
    VerifyResult unanchored = audit.verify(true, false);
    if (keyed) {
      CHECK(unanchored.fault == ChainFault::state_edited);
      CHECK_THAT(unanchored.problem, Contains("the chain_state row (head position 3, anchor "
                                              "position 0) was edited outside sandshim"));
    } else {
      CHECK(unanchored.ok);  // nothing left to compare with: the assurance says so
      CHECK_THAT(unanchored.assurance, Contains("unkeyed") && Contains("no anchor log"));
    }
  }
}

TEST_CASE("tamper: a row edited and every later hash recomputed with sqlite3 and sha256",
          "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  SECTION("keyed: the first edited row's HMAC does not match") {
    Audit audit;
    audit.add_runs(5);
    REQUIRE(audit.verify().ok);
    std::string before = hash_of(audit.db, "r2");
    execute_sql(audit.db, "UPDATE runs SET exit_code = 7 WHERE run_id = 'r2'");
    rechain_from(audit.db, 2);
    VerifyResult result = audit.verify(true, false);
    CHECK(result.fault == ChainFault::changed);
    CHECK_THAT(result.problem,
               StartsWith("run \"r2\" (chain position 2) was changed after it was recorded: its "
                          "hash does not match (expected ") &&
                   Contains(", found " + hash_of(audit.db, "r2").substr(0, 16) + "…)"));
    CHECK(hash_of(audit.db, "r2") != before);
  }
  SECTION("unkeyed: the chain verifies alone, the anchor log names the first rewritten head") {
    Audit audit(false);
    audit.add_runs(5);
    REQUIRE(audit.verify().ok);
    std::string recorded = hash_of(audit.db, "r2");
    execute_sql(audit.db, "UPDATE runs SET exit_code = 7 WHERE run_id = 'r2'");
    rechain_from(audit.db, 2);
    CHECK(audit.verify(false, false).ok);  // what re-chaining defeated before the anchor log
    VerifyResult result = audit.verify(false, true);
    CHECK(result.fault == ChainFault::rechained);
    CHECK(result.problem ==
          "run \"r2\" (chain position 2) is not the link the anchor log recorded (line 3, " +
              anchor_time(audit.anchor, 3) +
              "): a row between positions 2 and 2 was rewritten and every later hash recomputed "
              "(expected " +
              recorded.substr(0, 16) + "…, found " + hash_of(audit.db, "r2").substr(0, 16) + "…)");
  }
}

TEST_CASE("tamper: the first rows deleted and the anchor moved past them", "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  for (bool keyed : {true, false}) {
    INFO("keyed " << keyed);
    Audit audit(keyed);
    audit.add_runs(4);
    REQUIRE(audit.verify().ok);
    std::string r2 = hash_of(audit.db, "r2");
    execute_sql(audit.db, "DELETE FROM runs WHERE chain_seq <= 2");
    execute_sql(audit.db, "UPDATE chain_state SET anchor_seq = 2, anchor_hash = '" + r2 + "'");
    VerifyResult result = audit.verify();
    CHECK(result.fault == ChainFault::anchor_moved);
    CHECK_THAT(result.problem,
               StartsWith("the chain starts after position 2 (anchor " + r2.substr(0, 16) +
                          "…), but no `audit prune` recorded "
                          "that anchor in the anchor log: rows 1 to 2 were "
                          "deleted and the anchor moved"));
    CHECK(audit.verify(true, false).fault == (keyed ? ChainFault::state_edited : ChainFault::none));
  }
}

TEST_CASE("tamper: the database deleted and made again is not the chain the log anchors",
          "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit;
  audit.add_runs(3);
  REQUIRE(audit.verify().ok);
  std::string old_chain = audit.verify().state.chain_id;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    fs::remove(audit.db.string() + suffix);
  }
  std::string refused = fatal_message([&] { audit.add_runs(1, 10); }, 125);
  std::string new_chain = query_text(audit.db, "SELECT chain_id FROM chain_state");
  CHECK_THAT(refused, StartsWith("audit anchor \"" + audit.anchor.string() +
                                 "\" belongs to chain " + old_chain + " (database \"" +
                                 audit.db.string() + "\", line 1), not to chain " + new_chain +
                                 " of database \"" + audit.db.string() + "\"; fix: "));
  VerifyResult result = audit.verify();
  CHECK(result.fault == ChainFault::replaced);
  CHECK_THAT(result.problem,
             StartsWith("the anchor log belongs to chain " + old_chain + " of this database (\"" +
                        audit.db.string() + "\", line 1), but this database is chain " + new_chain +
                        ": the database it anchors was deleted or replaced"));
}

TEST_CASE("prune is an administrator's command and records its anchor", "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit;
  audit.add_runs(4);
  AuditContext context;
  context.configured_db = audit.db;
  context.key_file = audit.key_file;
  context.anchor_file = audit.anchor;
  auto audit_as = [&](const Viewer& viewer, std::vector<std::string> args) {
    context.viewer = viewer;
    std::ostringstream out;
    CommandResult result;
    try {
      result.code = audit_main(args, context, out, false);
    } catch (const sandshim::Fatal& error) {
      result.code = error.code();
      result.error = error.what();
    }
    result.out = out.str();
    return result;
  };
  CHECK(audit_as(Viewer::caller(1000, 998), {"verify"}).code == 0);
  CommandResult refused = audit_as(Viewer::caller(1000, 998), {"prune", "--older-than", "1s"});
  CHECK(refused.code == 125);
  CHECK(refused.error ==
        "audit prune is an administrator's command (root or the broker's user sandshim); fix: "
        "ask an administrator to run `sudo sandshim audit prune ...`");
  CHECK(query_int(audit.db, "SELECT count(*) FROM runs") == 4);

  CommandResult pruned =
      audit_as(Viewer::caller(998, 998), {"prune", "--older-than", "2024-05-01T10:30:00Z"});
  INFO(pruned.error);
  CHECK(pruned.code == 0);
  CHECK(query_int(audit.db, "SELECT count(*) FROM runs") == 2);
  CHECK_THAT(read_bytes(audit.anchor), Contains("\nprune "));
  CommandResult verified = audit_as(Viewer::caller(0, 998), {"verify"});
  CHECK(verified.code == 0);
  CHECK_THAT(verified.out, Contains("ok: 2 rows verified") && Contains("pruned on"));
  audit.add_runs(1, 20);
  CHECK(audit.verify().ok);
}

TEST_CASE("a caller sees only their own rows; administrators see all", "[audit][integrity]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  {
    Store store = open_test_store(db);
    int index = 0;
    for (uint32_t uid : {1000U, 1000U, 1001U}) {
      RunRecord run = sample_run("u" + std::to_string(uid) + "-" + std::to_string(index++));
      run.uid = uid;
      add_run(store, run);
    }
    DecisionRecord decision = sample_decision("toolu_1", Decision::deny);
    decision.uid = 1001;
    store.record_decision(decision);
  }
  AuditContext context;
  context.configured_db = db;
  auto list = [&](const Viewer& viewer, std::vector<std::string> args) {
    context.viewer = viewer;
    std::ostringstream out;
    try {
      audit_main(args, context, out, false);
    } catch (const sandshim::Fatal& error) {
      return std::string("error: ") + error.what();
    }
    return out.str();
  };
  std::string own = list(Viewer::caller(1000, 998), {"list", "--jsonl"});
  CHECK(std::count(own.begin(), own.end(), '\n') == 2);
  CHECK_THAT(own, !Contains("u1001"));
  CHECK(list(Viewer::caller(1000, 998), {"decisions", "--jsonl"}).empty());
  CHECK_THAT(list(Viewer::caller(1001, 998), {"decisions", "--jsonl"}), Contains("toolu_1"));
  CHECK_THAT(list(Viewer::caller(1000, 998), {"show", "u1001-2"}), Contains("no run matches"));
  CHECK_THAT(list(Viewer::caller(1000, 998), {"sql", "SELECT 1"}),
             Contains("audit sql is an administrator's command"));
  std::string all = list(Viewer::caller(0, 998), {"list", "--jsonl"});
  CHECK(std::count(all.begin(), all.end(), '\n') == 3);
  CHECK_THAT(list(Viewer::caller(1000, 998), {"stats", "--json"}), Contains("\"runs\": 2"));
}

TEST_CASE("an older database is migrated, then keyed from its next link", "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit;
  execute_sql(audit.db, read_bytes(fs::path(SANDSHIM_TEST_DATA_DIR) / "audit" / "schema_v1.sql"));
  REQUIRE(query_int(audit.db, "PRAGMA user_version") == 1);
  {
    Store plain = Store::open(StoreOptions{audit.db, std::chrono::seconds(5), false});
    add_run(plain, sample_run("old1", k_base_ms));
    add_run(plain, sample_run("old2", k_base_ms + k_hour_ms));
  }
  CHECK(query_int(audit.db, "PRAGMA user_version") == k_schema_version);
  CHECK(query_text(audit.db, "SELECT chain_id FROM chain_state").size() == 32);
  audit.add_runs(2);
  VerifyResult result = audit.verify();
  CHECK(result.ok);
  CHECK(result.links_checked == 5);  // the fixture's run, two unkeyed, two keyed
  CHECK(result.state.keyed_from_seq == 4);
  CHECK_THAT(result.assurance,
             StartsWith("keyed (HMAC-SHA256, key " + audit.key->id() + ") from position 4"));
}

namespace {

std::vector<std::string> anchor_lines(const fs::path& anchor) {
  std::vector<std::string> lines;
  std::istringstream in(read_bytes(anchor));
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

// Appends `junk` to the log, checks verify names line `line` with `what`, and restores it.
void expect_junk(const Audit& audit, const std::string& junk, int line, const std::string& what) {
  std::string original = read_bytes(audit.anchor);
  write_bytes(audit.anchor, original + junk);
  VerifyResult result = audit.verify();
  INFO(result.problem);
  CHECK(result.fault == ChainFault::anchor_junk);
  CHECK_THAT(result.problem, StartsWith("anchor log line " + std::to_string(line) +
                                        " was not written by its chain's writer: " + what));
  write_bytes(audit.anchor, original);
  CHECK(audit.verify().ok);
}

std::string chain_of(const fs::path& db) {
  return query_text(db, "SELECT chain_id FROM chain_state");
}

}  // namespace

TEST_CASE("anchor log: a line its chain did not write is named by its line", "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  bool keyed = GENERATE(true, false);
  Audit audit(keyed);
  audit.add_runs(3);
  REQUIRE(audit.verify().ok);
  REQUIRE(anchor_lines(audit.anchor).size() == 4);  // the header, then three heads
  CHECK_THAT(audit.verify().assurance, Contains("format 2 (sealed lines of chain "));
  std::string chain = chain_of(audit.db);
  std::string last = anchor_lines(audit.anchor).back();
  const ChainKey* key = audit.key ? &*audit.key : nullptr;
  AnchorEntry forged{AnchorEntry::Kind::head, chain, 4, std::string(64, 'a'), 1};

  expect_junk(audit, "garbage\n", 5, "it is not an anchor line: \"garbage\"");
  expect_junk(audit, "\n", 5, "it is not an anchor line");
  expect_junk(audit, "head " + chain + " 4 " + std::string(64, 'a') + " 1\n", 5,
              "a line in the old format (1) after the log's header");
  AnchorEntry other = forged;
  other.chain_id = "0123456789abcdef";
  expect_junk(audit, anchor_line(other, key), 5,
              "a line of chain \"0123456789abcdef\", not of the log's chain " + chain);
  std::string broken = last;
  broken[broken.find(' ', 6) + 1] = broken[broken.find(' ', 6) + 1] == '9' ? '8' : '9';
  expect_junk(audit, broken + "\n", 5, "its seal does not match its content");
  expect_junk(audit, last.substr(0, 20), 5, "it is cut short (no newline ends it)");
  if (keyed) {
    expect_junk(audit, anchor_line(forged, nullptr), 5,
                "it is sealed with a checksum, not the chain key, at keyed position 4");
  } else {
    ChainKey stranger{std::string(32, 'k')};
    expect_junk(audit, anchor_line(forged, &stranger), 5,
                "it is sealed with a chain key this reader does not have");
  }
}

TEST_CASE("anchor log: a newline in a caller's field cannot forge a line", "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit;
  audit.add_runs(1);
  std::string chain = chain_of(audit.db);
  std::string forged_head = "head " + chain + " 99 " + std::string(64, 'b') + " 1";
  {
    Store store = audit.writer();
    DecisionRecord decision = sample_decision("toolu_nl", Decision::deny);
    decision.session_id = "s\n" + forged_head + "\n";
    decision.original_command = "echo\n" + forged_head + "\r\n";
    store.record_decision(decision);
  }
  auto lines = anchor_lines(audit.anchor);
  CHECK(lines.size() == 3);
  for (const auto& line : lines) {
    CHECK_FALSE(line.starts_with(forged_head));
  }
  VerifyResult result = audit.verify();
  CHECK(result.ok);
  CHECK(result.anchored_heads == 2);
  // A chain id the file's owner edited to hold a line break still writes one line.
  AnchorEntry edited{AnchorEntry::Kind::head, "x\n" + forged_head, 1, std::string(64, 'c'), 1};
  std::string line = anchor_line(edited, &*audit.key);
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(line.starts_with("head x\\x0ahead\\x20"));
}

TEST_CASE("anchor log: it belongs to one chain; a second is refused at open",
          "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit;
  audit.add_runs(2);
  fs::path neighbour = audit.dir / "neighbour.db";
  StoreOptions options{neighbour, std::chrono::seconds(5), false};
  options.key = audit.key;
  options.anchor_file = audit.anchor;
  std::string refused = fatal_message([&] { Store::open(options); }, 125);
  CHECK_THAT(refused,
             StartsWith("audit anchor \"" + audit.anchor.string() + "\" belongs to chain " +
                        chain_of(audit.db) + " (database \"" + audit.db.string() +
                        "\", line 1), not to chain " + chain_of(neighbour) + " of database \"" +
                        neighbour.string() + "\""));
  CHECK(anchor_lines(audit.anchor).size() == 3);
  Store reader = Store::open(StoreOptions{neighbour, std::chrono::seconds(5), true});
  VerifyOptions verify_options{&*audit.key, audit.anchor};
  VerifyResult result = verify_chain(reader.database(), verify_options);
  CHECK(result.ok);  // a neighbour's log is not a sign that this database was replaced
  CHECK_THAT(result.assurance,
             Contains("belongs to chain " + chain_of(audit.db) + " of another database (\"" +
                      audit.db.string() + "\"): not compared"));
  CHECK(audit.verify().ok);
}

TEST_CASE("anchor log: a format-1 log is read, then claimed by its chain", "[audit][integrity]") {
  if (!as_root()) {
    return;
  }
  Audit audit(false);
  {
    Store store = audit.writer(false);
    add_run(store, sample_run("r1", k_base_ms));
    add_run(store, sample_run("r2", k_base_ms + k_hour_ms));
  }
  std::string chain = chain_of(audit.db);
  std::string old_lines = "head " + chain + " 1 " + hash_of(audit.db, "r1") + " 5\nhead " + chain +
                          " 2 " + hash_of(audit.db, "r2") + " 6\n";
  write_bytes(audit.anchor, old_lines);
  VerifyResult old_format = audit.verify();
  CHECK(old_format.ok);
  CHECK(old_format.anchored_heads == 2);
  CHECK_THAT(old_format.assurance, Contains("read in the old format 1"));

  write_bytes(audit.anchor, "head 0123456789abcdef 1 " + std::string(64, 'd') + " 4\n" + old_lines);
  CHECK(audit.verify().fault == ChainFault::replaced);  // format 1 cannot tell a neighbour
  audit.add_runs(1, 3);
  auto lines = anchor_lines(audit.anchor);
  REQUIRE(lines.size() == 5);
  CHECK(lines[3].starts_with("sandshim-anchor 2 " + chain + " "));
  VerifyResult migrated = audit.verify();
  CHECK(migrated.ok);
  CHECK(migrated.anchored_heads == 3);
  CHECK_THAT(migrated.assurance,
             Contains("format 2 from line 4") && Contains("3 unsealed format-1 lines before it"));
  expect_junk(audit, "head " + chain + " 3 " + hash_of(audit.db, "r3") + " 7\n", 6,
              "a line in the old format (1) after the log's header");
}
