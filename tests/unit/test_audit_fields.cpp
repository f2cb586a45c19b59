#include <catch2/catch.hpp>
#include <set>
#include <string_view>

#include "audit/chain.hpp"
#include "audit/fleet_verify.hpp"
#include "audit/query.hpp"
#include "audit/run_fields.hpp"
#include "audit/schema.hpp"
#include "audit/sqlite.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;

namespace {

fs::path fixture(const std::string& name) {
  return fs::path(SANDSHIM_TEST_DATA_DIR) / "audit" / name;
}

// The secret tests/data/audit/schema_v8.sql and fleet_v8.jsonl were keyed with.
ChainKey fixture_key() {
  return ChainKey{std::string(32, 'k')};
}

// Every table, index and trigger as SQLite stores its text: the on-disk schema, byte for byte.
std::string stored_schema(const fs::path& db) {
  return query_text(db,
                    "SELECT group_concat(type || ' ' || name || char(10) || sql, char(10)) FROM "
                    "(SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                    "ORDER BY type, name)");
}

std::string row_hashes(const fs::path& db) {
  return query_text(db,
                    "SELECT group_concat(h, ' ') FROM (SELECT chain_seq || '=' || row_hash AS h "
                    "FROM runs WHERE chain_seq IS NOT NULL UNION ALL SELECT chain_seq || '=' || "
                    "row_hash FROM decisions WHERE chain_seq IS NOT NULL ORDER BY 1)");
}

// Opens the database as its writer would: with the fixture's key when its chain is keyed (the
// broker's), which an upgrade needs.
Store open_as_writer(const fs::path& db) {
  StoreOptions options{db};
  options.key = fixture_key();
  options.adopt_key = false;
  return Store::open(options);
}

fs::path database_from(const TempDir& dir, const std::string& dump) {
  fs::path db = dir / "audit.db";
  execute_sql(db, read_bytes(fixture(dump)));
  return db;
}

}  // namespace

TEST_CASE("a keyed database schema 8 wrote opens, migrates and verifies unchanged",
          "[audit][schema][fields]") {
  TempDir dir;
  fs::path db = database_from(dir, "schema_v8.sql");
  REQUIRE(query_int(db, "PRAGMA user_version") == 8);
  std::string hashes = row_hashes(db);
  StoreOptions options{db};
  options.key = fixture_key();
  Store store = Store::open(options);
  CHECK(query_int(db, "PRAGMA user_version") == k_schema_version);
  CHECK(row_hashes(db) == hashes);
  VerifyOptions verify_options;
  verify_options.key = store.key();
  VerifyResult opened = verify_chain(store.database(), verify_options);
  CHECK(opened.ok);
  CHECK(opened.problem.empty());
  CHECK(opened.links_checked == 4);
  CHECK(opened.state.keyed_from_seq == 4);
  // The run schema 8 began completes now and joins the keyed chain after the old links.
  RunRecord begun = sample_run("v8running", 1788000003000);
  store.complete_run(begun);
  VerifyResult completed = verify_chain(store.database(), verify_options);
  CHECK(completed.ok);
  CHECK(completed.links_checked == 5);
  // Without the key the old keyed links cannot be checked, and verify says so.
  CHECK(verify_chain(store.database()).fault == ChainFault::no_key);
}

TEST_CASE("a database schema 8 wrote lists every field as schema 8 read it",
          "[audit][schema][fields]") {
  TempDir dir;
  fs::path db = database_from(dir, "schema_v8.sql");
  open_as_writer(db);
  CommandResult listed = run_audit({"export", "--jsonl"}, db);
  REQUIRE(listed.code == 0);
  CHECK_THAT(listed.out, Catch::Contains("\"run_id\":\"v8a\",\"status\":\"ok\""));
  CHECK_THAT(listed.out, Catch::Contains("\"argv_hex\":[\"707974686f6e\",\"2d63\""));
  CHECK_THAT(listed.out, Catch::Contains("\"limit_hit\":\"sandbox.pids\""));
  CHECK_THAT(listed.out, Catch::Contains("\"hidden_globs\":[\".env\"]"));
}

TEST_CASE("a keyed fleet export schema 8 wrote verifies and loads", "[audit][fleet][fields]") {
  auto records = read_exports({fixture("fleet_v8.jsonl")});
  ExportVerifyResult result = verify_exports(records, HostKeys{{"fixture-host", fixture_key()}});
  CHECK(result.ok);
  REQUIRE(result.hosts.size() == 1);
  CHECK(result.hosts[0].faults.empty());
  CHECK(result.hosts[0].rows == 4);
  auto loaded = load_exports(records);
  CHECK(loaded->query_int("SELECT count(*) FROM runs", "count runs") == 3);
}

TEST_CASE("a new database has the schema older ones are migrated to, byte for byte",
          "[audit][schema][fields]") {
  TempDir dir;
  fs::path fresh = dir / "fresh.db";
  open_test_store(fresh);
  std::string expected = stored_schema(fresh);
  for (const char* dump : {"schema_v1.sql", "schema_v7.sql", "schema_v8.sql"}) {
    INFO(dump);
    TempDir old_dir;
    fs::path old = database_from(old_dir, dump);
    open_as_writer(old);
    CHECK(stored_schema(old) == expected);
  }
}

TEST_CASE("the run field table: each column once, filters on its columns, FIELDS.md has each",
          "[audit][fields]") {
  std::set<std::string_view> columns;
  for (const auto& field : k_run_fields) {
    if (field.written != Written::shown) {
      CHECK(columns.insert(field.column).second);
      CHECK(!field.sql_type.empty());
    }
    CHECK((field.value != nullptr) ==
          (field.written == Written::at_begin || field.written == Written::by_record));
  }
  for (const auto& field : k_run_fields) {
    CHECK(columns.count(field.column) == 1);  // a shown field shows a column of the table
  }
  for (const auto& spec : filter_specs()) {
    INFO(spec.option);
    CHECK((spec.run_column.empty() || columns.count(spec.run_column) == 1));
  }
  std::string fields_md =
      read_bytes(fs::path(SANDSHIM_TEST_DATA_DIR) / ".." / ".." / "audit" / "FIELDS.md");
  std::string run_section = fields_md.substr(fields_md.find("## Run fields"));
  run_section = run_section.substr(0, run_section.find("\n## ", 1));
  for (const auto& field : k_run_fields) {
    INFO(field.name);
    CHECK(run_section.find("`" + std::string(field.name) + "`") != std::string::npos);
  }
}

TEST_CASE("the chain hashes the run columns in the order SQLite keeps them, late ones if set",
          "[audit][fields][chain]") {
  // Frozen: what schema 8 hashed; a later column may only follow it.
  constexpr std::string_view k_schema_8_columns =
      "run_id, status, start_ms, end_ms, duration_ms, invoked_as, argv, argv_raw, cwd, "
      "workspace, engine, image, image_digest, container_name, engine_args, policy_digest, "
      "policy_sources, limits, exit_code, signal, message, stdout_bytes, stderr_bytes, "
      "stdout_tail, stderr_tail, uid, host, pid, ppid, parent_name, agent, agent_session, "
      "tool_use_id, env_names, warm, boot_id, pid_start_ticks, chain_seq, prev_hash, limit_hit, "
      "hidden_count, hidden_globs";
  CHECK(k_run_chain.hashed_columns.starts_with(k_schema_8_columns));
  CHECK(is_added_column(k_run_chain, "limit_hit"));
  CHECK(is_added_column(k_run_chain, "hidden_globs"));
  CHECK(k_run_chain.hashed_columns.ends_with("via, changed_count, changed_paths"));
  CHECK(is_added_column(k_run_chain, "changed_paths"));
  CHECK_FALSE(is_added_column(k_run_chain, "warm"));
  CHECK(is_added_column(k_decision_chain, "outcome"));
  CHECK_FALSE(is_added_column(k_decision_chain, "uid"));
}

TEST_CASE("via: null in rows from before schema 9, hashed in new ones", "[audit][fields]") {
  TempDir dir;
  fs::path db = database_from(dir, "schema_v8.sql");
  Store store = open_as_writer(db);
  CHECK(query_int(db, "SELECT count(*) FROM runs WHERE via IS NULL") == 4);
  RunRecord brokered = sample_run("v9broker", 1788000004000);
  brokered.via = "broker";
  add_run(store, brokered);
  CHECK(query_text(db, "SELECT via FROM runs WHERE run_id = 'v9broker'") == "broker");
  VerifyOptions verify_options;
  verify_options.key = store.key();
  CHECK(verify_chain(store.database(), verify_options).ok);
  CommandResult listed = run_audit({"export", "--jsonl"}, db);
  CHECK_THAT(listed.out, Catch::Contains("\"via\":null"));
  CHECK_THAT(listed.out, Catch::Contains("\"via\":\"broker\""));
  execute_sql(db, "UPDATE runs SET via = 'direct' WHERE run_id = 'v9broker'");
  VerifyResult edited = verify_chain(store.database(), verify_options);
  CHECK(edited.fault == ChainFault::changed);
  CHECK_THAT(edited.problem, Catch::Contains("v9broker"));
}
