#include <sqlite3.h>

#include <catch2/catch.hpp>

#include <map>

#include "audit/chain.hpp"
#include "audit/sqlite.hpp"
#include "common/error.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr int64_t k_hour_ms = 3600000;
constexpr int64_t k_base_ms = 1714550400000;

// r1..r`count`, started an hour apart, completed in order.
fs::path chain_of(const TempDir& dir, int count) {
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  for (int i = 1; i <= count; ++i) {
    add_run(store, sample_run("r" + std::to_string(i), k_base_ms + i * k_hour_ms));
  }
  return db;
}

// The canonical encoding as audit/FIELDS.md documents it, written again from the text, so the
// documentation and the code cannot drift apart.

// Every run's hash recomputed from the documentation: run_id -> hash.
std::map<std::string, std::string> documented_run_hashes(const fs::path& db) {
  sqlite3* handle = nullptr;
  sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* row = nullptr;
  std::string sql = "SELECT " + std::string(k_run_chain.hashed_columns) + " FROM runs";
  sqlite3_prepare_v2(handle, sql.c_str(), -1, &row, nullptr);
  std::map<std::string, std::string> hashes;
  while (sqlite3_step(row) == SQLITE_ROW) {
    hashes[reinterpret_cast<const char*>(sqlite3_column_text(row, 0))] =
        documented_row_hash(row, "run");
  }
  sqlite3_finalize(row);
  sqlite3_close_v2(handle);
  return hashes;
}

VerifyResult verify(const fs::path& db) {
  Store store = Store::open(StoreOptions{db, std::chrono::seconds(5), true});
  return verify_chain(store.database());
}

}  // namespace

TEST_CASE("an untouched chain verifies", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 5);
  VerifyResult result = verify(db);
  CHECK(result.ok);
  CHECK(result.problem.empty());
  CHECK(result.links_checked == 5);
  CHECK(result.state.head_seq == 5);
  CHECK(result.state.head_hash == query_text(db, "SELECT row_hash FROM runs WHERE run_id = 'r5'"));
  CHECK(query_text(db, "SELECT prev_hash FROM runs WHERE run_id = 'r1'") == k_genesis_hash);
}

TEST_CASE("an empty chain verifies", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 0);
  CHECK(verify(db).ok);
}

TEST_CASE("the documented canonical encoding gives every stored hash", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 3);
  for (const auto& [run_id, hash] : documented_run_hashes(db)) {
    CAPTURE(run_id);
    CHECK(hash == query_text(db, "SELECT row_hash FROM runs WHERE run_id = '" + run_id + "'"));
  }
}

TEST_CASE("a row changed and rehashed by hand is found at the next link", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 3);
  execute_sql(db, "UPDATE runs SET exit_code = 1, status = 'error' WHERE run_id = 'r2'");
  execute_sql(db, "UPDATE runs SET row_hash = '" + documented_run_hashes(db)["r2"] +
                      "' WHERE run_id = 'r2'");
  CHECK_THAT(verify(db).problem,
             StartsWith("run \"r3\" (chain position 3) does not follow run \"r2\": run \"r2\" was "
                        "changed and its hash recomputed, or rows were inserted out of order or "
                        "reordered (expected "));
}

TEST_CASE("the chain follows completion order, not start order", "[audit][chain]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  RunRecord first = sample_run("first", k_base_ms);
  RunRecord second = sample_run("second", k_base_ms + 10);
  store.begin_run(first);
  store.begin_run(second);
  store.complete_run(second);
  store.complete_run(first);
  CHECK(query_int(db, "SELECT chain_seq FROM runs WHERE run_id = 'second'") == 1);
  CHECK(query_int(db, "SELECT chain_seq FROM runs WHERE run_id = 'first'") == 2);
  CHECK(verify_chain(store.database()).ok);
}

TEST_CASE("verify names the first row that was changed", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 5);
  SECTION("an exit code") {
    execute_sql(db, "UPDATE runs SET exit_code = 7 WHERE run_id = 'r3'");
  }
  SECTION("a tail's bytes") {
    execute_sql(db, "UPDATE runs SET stdout_tail = X'6869' WHERE run_id = 'r3'");
  }
  SECTION("a value's type only") {
    execute_sql(db, "UPDATE runs SET image = CAST(image AS BLOB) WHERE run_id = 'r3'");
  }
  SECTION("its own hash, recomputed by hand, without the next link") {
    execute_sql(db, "UPDATE runs SET row_hash = 'ab' || substr(row_hash, 3) WHERE run_id = 'r3'");
  }
  VerifyResult result = verify(db);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.problem, Contains("run \"r3\" (chain position 3)"));
}

TEST_CASE("verify says what was done to the first tampered row", "[audit][chain]") {
  struct Tampering {
    const char* sql;
    const char* problem;
  };
  const Tampering k_cases[] = {
      {"UPDATE runs SET image = 'evil' WHERE run_id = 'r2'",
       "run \"r2\" (chain position 2) was changed after it was recorded: its hash does not match"},
      {"DELETE FROM runs WHERE run_id = 'r3'",
       "chain positions 3 to 3 are missing before run \"r4\": rows were deleted"},
      {"DELETE FROM runs WHERE run_id IN ('r4', 'r5')",
       "the chain head is position 5 but the last row is 3: rows after run \"r3\" were deleted "
       "or the head was edited"},
      {"DELETE FROM runs",
       "the chain head is position 5 but the last row is 0: rows after the "
       "anchor were deleted or the head was edited"},
  };
  for (const auto& tampering : k_cases) {
    CAPTURE(tampering.sql);
    TempDir dir;
    fs::path db = chain_of(dir, 5);
    execute_sql(db, tampering.sql);
    CHECK_THAT(verify(db).problem, StartsWith(tampering.problem));
  }
}

TEST_CASE("verify notices rows that were reordered", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 5);
  execute_sql(db,
              "UPDATE runs SET chain_seq = -chain_seq WHERE run_id IN ('r2', 'r3');"
              "UPDATE runs SET chain_seq = 3 WHERE run_id = 'r2';"
              "UPDATE runs SET chain_seq = 2 WHERE run_id = 'r3';");
  VerifyResult result = verify(db);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.problem, Contains("run \"r3\" (chain position 2)"));
}

TEST_CASE("verify notices a row inserted out of order", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 3);
  SECTION("at a position already taken") {
    execute_sql(
        db,
        "INSERT INTO decisions VALUES (NULL, 'forged', 0, 'a', 'e', 's', 't', '/', 'c', '', "
        "'allow', '', '', 0, NULL, NULL, NULL, 2, 'x', 'y', NULL, NULL, NULL, NULL)");
    CHECK(verify(db).problem ==
          "decision \"forged\" (chain position 2) comes before position 3, which is already "
          "taken: it was inserted out of order");
  }
  SECTION("outside the chain") {
    execute_sql(db,
                "CREATE TEMP TABLE copy AS SELECT * FROM runs WHERE run_id = 'r2';"
                "UPDATE copy SET id = NULL, run_id = 'forged', chain_seq = NULL, prev_hash = NULL, "
                "row_hash = NULL;"
                "INSERT INTO runs SELECT * FROM copy;");
    CHECK(verify(db).problem ==
          "run \"forged\" is finished but not in the chain: it was inserted or edited outside "
          "sandshim");
  }
}

TEST_CASE("verify covers hook decisions in the same chain", "[audit][chain][decisions]") {
  TempDir dir;
  fs::path db = chain_of(dir, 2);
  {
    Store store = open_test_store(db);
    store.record_decision(sample_decision("toolu_d", Decision::deny));
    add_run(store, sample_run("r3", k_base_ms + 3 * k_hour_ms));
  }
  REQUIRE(verify(db).links_checked == 4);
  SECTION("changed") {
    execute_sql(db, "UPDATE decisions SET decision = 'allow'");
    CHECK_THAT(verify(db).problem, Contains("decision \""));
    CHECK_THAT(verify(db).problem, Contains("(chain position 3) was changed"));
  }
  SECTION("deleted") {
    execute_sql(db, "DELETE FROM decisions");
    CHECK_THAT(verify(db).problem, Contains("are missing before run \"r3\""));
  }
}

TEST_CASE("verify reports a missing chain state", "[audit][chain]") {
  TempDir dir;
  fs::path db = chain_of(dir, 2);
  execute_sql(db, "DELETE FROM chain_state");
  CHECK(verify(db).problem == "the chain_state row is missing: it was deleted outside sandshim");
}

TEST_CASE("prune deletes the oldest rows and verify still passes", "[audit][chain][prune]") {
  TempDir dir;
  fs::path db = chain_of(dir, 6);
  int64_t now = k_base_ms + 100 * k_hour_ms;
  Store store = open_test_store(db);
  int64_t cutoff = k_base_ms + 3 * k_hour_ms + 1000;  // r1..r3 finished before it

  PruneResult dry = prune_chain(store.database(), cutoff, now, true);
  CHECK(dry.runs_deleted == 3);
  CHECK(query_int(db, "SELECT count(*) FROM runs") == 6);

  PruneResult pruned = prune_chain(store.database(), cutoff, now, false);
  CHECK(pruned.runs_deleted == 3);
  CHECK(pruned.anchor_seq == 3);
  CHECK(query_text(db, "SELECT group_concat(run_id) FROM runs") == "r4,r5,r6");
  VerifyResult after = verify_chain(store.database());
  CHECK(after.ok);
  CHECK(after.links_checked == 3);
  CHECK(after.state.anchor_ms == now);

  CHECK(prune_chain(store.database(), cutoff, now, false).runs_deleted == 0);
  add_run(store, sample_run("r7", k_base_ms + 7 * k_hour_ms));
  CHECK(verify_chain(store.database()).ok);

  CHECK(prune_chain(store.database(), now, now, false).runs_deleted == 4);
  CHECK(verify_chain(store.database()).ok);
  add_run(store, sample_run("r8", now));
  CHECK(verify_chain(store.database()).links_checked == 1);
}

TEST_CASE("prune keeps running rows and stops at the first recent link", "[audit][chain][prune]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  store.begin_run(sample_run("still-running", k_base_ms));
  add_run(store, sample_run("old", k_base_ms));
  add_run(store, sample_run("recent", k_base_ms + 50 * k_hour_ms));
  add_run(store, sample_run("old-but-late", k_base_ms));  // chained after "recent"
  PruneResult pruned = prune_chain(store.database(), k_base_ms + k_hour_ms, k_base_ms, false);
  CHECK(pruned.runs_deleted == 1);
  CHECK(query_text(db, "SELECT group_concat(run_id) FROM (SELECT run_id FROM runs ORDER BY id)") ==
        "still-running,recent,old-but-late");
  CHECK(verify_chain(store.database()).ok);
}

TEST_CASE("prune refuses a chain that does not verify", "[audit][chain][prune]") {
  TempDir dir;
  fs::path db = chain_of(dir, 3);
  execute_sql(db, "UPDATE runs SET exit_code = 9 WHERE run_id = 'r1'");
  Store store = open_test_store(db);
  CHECK_THROWS_WITH(prune_chain(store.database(), k_base_ms + 10 * k_hour_ms, k_base_ms, false),
                    Contains("cannot prune: the chain does not verify (run \"r1\""));
  CHECK(query_int(db, "SELECT count(*) FROM runs") == 3);
}

// Schema 3 added answer, permission_mode and outcome to decisions; a row chained before that
// (they are null) must hash exactly as the schema-2 recipe did, or every upgraded file would
// fail `verify`.
TEST_CASE("a decision without the schema-3 columns keeps its schema-2 hash", "[audit][chain]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  Store store = open_test_store(db);
  DecisionRecord old_style = sample_decision("toolu_old", Decision::deny);
  store.record_decision(old_style);  // sealed at once; answer is empty, not null
  execute_sql(db,
              "UPDATE decisions SET answer = NULL, permission_mode = NULL, outcome = NULL;"
              "UPDATE decisions SET row_hash = NULL, chain_seq = NULL, prev_hash = NULL;"
              "UPDATE chain_state SET head_seq = 0, head_hash = printf('%.64d', 0);");
  seal_row(store.database(), k_decision_chain,
           store.database().query_int("SELECT id FROM decisions", "find the row"));
  sqlite3* handle = nullptr;
  sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* row = nullptr;
  std::string v2_columns =
      "decision_id, time_ms, agent, event, session_id, tool_use_id, cwd, original_command, "
      "rewritten_command, decision, reason, rule, payload_bytes, exit_code, completed_ms, "
      "tool_response_tail, chain_seq, prev_hash";
  std::string sql = "SELECT " + v2_columns + ", row_hash FROM decisions";
  sqlite3_prepare_v2(handle, sql.c_str(), -1, &row, nullptr);
  REQUIRE(sqlite3_step(row) == SQLITE_ROW);
  std::string stored = reinterpret_cast<const char*>(sqlite3_column_text(row, 18));
  // documented_row_hash reads every column of the statement: prepare one without row_hash.
  sqlite3_finalize(row);
  sql = "SELECT " + v2_columns + " FROM decisions";
  sqlite3_prepare_v2(handle, sql.c_str(), -1, &row, nullptr);
  REQUIRE(sqlite3_step(row) == SQLITE_ROW);
  CHECK(documented_row_hash(row, "decision") == stored);
  sqlite3_finalize(row);
  sqlite3_close_v2(handle);
  CHECK(verify(db).ok);
}
