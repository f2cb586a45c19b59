#pragma once

// Helpers shared by the audit tests: a temporary directory per test, sample records, raw SQL for
// tampering, and running code as an unprivileged user so file modes apply even under root.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "audit/decision_record.hpp"
#include "audit/run_record.hpp"
#include "audit/store.hpp"

struct sqlite3_stmt;

namespace sandshim::audit::testing {

namespace fs = std::filesystem;

// A fresh directory, removed afterwards unless the test failed (then its path is printed).
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const fs::path& path() const { return m_path; }
  fs::path operator/(const std::string& name) const { return m_path / name; }

 private:
  fs::path m_path;
};

// True once an assertion of the running test case failed.
bool current_test_failed();

// A plausible finished run on this host; tests change what they check.
RunRecord sample_run(const std::string& run_id, int64_t start_ms = 1714550400000,
                     RunStatus status = RunStatus::ok);
DecisionRecord sample_decision(const std::string& tool_use_id, Decision decision,
                               int64_t time_ms = 1714550400000);

Store open_test_store(const fs::path& db,
                      std::chrono::milliseconds busy_timeout = std::chrono::milliseconds(5000));
// begin_run + complete_run, as the shim does.
void add_run(Store& store, const RunRecord& record);

std::string read_bytes(const fs::path& file);
// The text's lines, without their line feeds.
std::vector<std::string> lines_of(const std::string& text);
void write_bytes(const fs::path& file, const std::string& bytes);

// Runs SQL through a separate raw connection, as someone editing the file with sqlite3 would.
void execute_sql(const fs::path& db, const std::string& sql);
int64_t query_int(const fs::path& db, const std::string& sql);
std::string query_text(const fs::path& db, const std::string& sql);

// The message of the sandshim::Fatal that `body` throws, checking its exit code.
std::string fatal_message(const std::function<void()>& body, int expected_code);

// What `sandshim audit ARGS` printed and returned, a Fatal's code and message included.
struct CommandResult {
  int code = 0;
  std::string out;
  std::string error;
};
CommandResult run_audit(std::vector<std::string> args, const fs::path& db, bool tty = false);

// Runs `body` in a child process, as `nobody` when the tests run as root so that permission bits
// apply; returns the child's exit code and the message of the Fatal it threw, if any.
struct ChildResult {
  int code = 0;
  std::string message;
};
ChildResult run_in_child(const std::function<void()>& body, bool unprivileged);

// The documented v1 (unkeyed) link hash of the statement's current row, computed from
// audit/FIELDS.md alone as an attacker with sqlite3 and sha256sum would: every column from
// `first_column` on, as name, NUL, typed value. Hex.
std::string documented_row_hash(sqlite3_stmt* row, const char* kind, int first_column = 0);

}  // namespace sandshim::audit::testing
