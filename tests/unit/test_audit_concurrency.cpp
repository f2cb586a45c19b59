#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <thread>

#include "audit/chain.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::audit;
using namespace sandshim::audit::testing;

namespace {

constexpr int k_writers = 64;

// What one shim does: open the store, begin, complete, each writer on its own connection.
void one_shim_run(const fs::path& db, int index) {
  Store store = open_test_store(db, std::chrono::milliseconds(30000));
  store.mark_abandoned_runs();
  RunRecord record = sample_run("run-" + std::to_string(index), 1714550400000 + index);
  store.begin_run(record);
  store.complete_run(record);
}

// Forks one process per writer, each a shim run; returns how many failed.
int failures_of_processes(const fs::path& db) {
  std::vector<pid_t> children;
  for (int i = 0; i < k_writers; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ChildResult result = run_in_child([&] { one_shim_run(db, i); }, false);
      if (result.code != 0) {
        std::fprintf(stderr, "writer %d: exit %d: %s\n", i, result.code, result.message.c_str());
      }
      ::_exit(result.code);
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failures += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  return failures;
}

void check_all_rows_chained(const fs::path& db) {
  CHECK(query_int(db, "SELECT count(*) FROM runs WHERE status = 'ok'") == k_writers);
  CHECK(query_int(db, "SELECT count(DISTINCT chain_seq) FROM runs") == k_writers);
  CHECK(query_int(db, "SELECT max(chain_seq) FROM runs") == k_writers);
  Store store = Store::open(StoreOptions{db, std::chrono::seconds(5), true});
  VerifyResult result = verify_chain(store.database());
  CHECK(result.problem.empty());
  CHECK(result.links_checked == k_writers);
}

}  // namespace

TEST_CASE("64 threads completing runs at once give 64 chained rows", "[audit][concurrency]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < k_writers; ++i) {
    threads.emplace_back([&, i] {
      try {
        one_shim_run(db, i);
      } catch (const std::exception& error) {
        UNSCOPED_INFO(error.what());
        ++failures;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(failures == 0);
  check_all_rows_chained(db);
}

TEST_CASE("64 processes completing runs at once give 64 chained rows", "[audit][concurrency]") {
  TempDir dir;
  fs::path db = dir / "audit.db";
  open_test_store(db);  // the schema exists; the children race on the rows
  CHECK(failures_of_processes(db) == 0);
  check_all_rows_chained(db);
}

TEST_CASE("64 processes creating the database at once all succeed", "[audit][concurrency]") {
  TempDir dir;
  fs::path db = dir / "fresh" / "audit.db";
  CHECK(failures_of_processes(db) == 0);
  check_all_rows_chained(db);
}
