#include "test_audit_support.hpp"

#include <fcntl.h>
#include <grp.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // for the listener that keeps a failed test's directory
#include <catch2/catch.hpp>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "audit/commands.hpp"
#include "common/error.hpp"

namespace sandshim::audit::testing {

namespace {

bool g_test_failed = false;

// Remembers whether the running test case failed, so its temporary directory is kept.
struct FailureListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    g_test_failed = false;
    TestEventListenerBase::testCaseStarting(info);
  }
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    g_test_failed = g_test_failed || !stats.assertionResult.isOk();
    return true;
  }
};

// A raw connection, outside the store, for tampering and inspection.
class RawConnection {
 public:
  explicit RawConnection(const fs::path& db) {
    if (sqlite3_open_v2(db.c_str(), &m_handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        nullptr) != SQLITE_OK) {
      throw std::runtime_error("test: cannot open " + db.string());
    }
    sqlite3_busy_timeout(m_handle, 5000);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection() { sqlite3_close_v2(m_handle); }

  // The first column of the first row, as text (empty when there is none).
  std::string first_value(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(m_handle, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      throw std::runtime_error("test SQL: " + std::string(sqlite3_errmsg(m_handle)));
    }
    std::string value;
    if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    }
    sqlite3_finalize(statement);
    return value;
  }

  void execute(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(m_handle, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error != nullptr ? error : "?";
      sqlite3_free(error);
      throw std::runtime_error("test SQL: " + message);
    }
  }

 private:
  sqlite3* m_handle = nullptr;
};

void become_nobody() {
  if (::geteuid() != 0) {
    return;
  }
  if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
    ::_exit(98);
  }
}

}  // namespace

CATCH_REGISTER_LISTENER(FailureListener)

bool current_test_failed() {
  return g_test_failed;
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "sandshim-audit-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("test: mkdtemp failed");
  }
  m_path = pattern;
}

TempDir::~TempDir() {
  if (current_test_failed() || std::uncaught_exceptions() > 0) {
    std::cerr << "test directory kept: " << m_path << '\n';
    return;
  }
  std::error_code ignored;
  fs::permissions(m_path, fs::perms::owner_all, fs::perm_options::add, ignored);
  fs::remove_all(m_path, ignored);
}

RunRecord sample_run(const std::string& run_id, int64_t start_ms, RunStatus status) {
  RunRecord record;
  record.run_id = run_id;
  record.start_ms = start_ms;
  record.end_ms = start_ms + 250;
  record.invoked_as = "python";
  record.argv = {"python", "-c", "print('hi')"};
  record.cwd = "/work/app";
  record.workspace = "/work/app";
  record.engine = "docker";
  record.image = "python:3.12-slim";
  record.image_digest = "sha256:0123";
  record.container_name = "sandshim-" + run_id;
  record.engine_args = {"docker", "run", "--rm", "--network=none"};
  record.policy_digest = "sha256:abcd";
  record.policy_sources = {"/etc/sandshim/policy.toml"};
  record.limits = "memory=512m cpus=1 pids=64 timeout=30s";
  record.status = status;
  record.exit_code = status == RunStatus::ok ? 0 : 1;
  record.stdout_bytes = 3;
  record.stdout_tail = "hi\n";
  record.uid = ::getuid();
  record.host = current_host();
  record.pid = ::getpid();
  record.ppid = ::getppid();
  record.parent_name = "claude";
  record.agent = "claude-code";
  record.agent_session = "session-1";
  record.tool_use_id = "toolu_" + run_id;
  record.env_names = {"PATH", "HOME"};
  return record;
}

DecisionRecord sample_decision(const std::string& tool_use_id, Decision decision, int64_t time_ms) {
  DecisionRecord record;
  record.time_ms = time_ms;
  record.agent = "claude-code";
  record.event = "PreToolUse";
  record.session_id = "session-1";
  record.tool_use_id = tool_use_id;
  record.cwd = "/work/app";
  record.original_command = "python -c 'print(1)'";
  record.rewritten_command =
      decision == Decision::rewrite ? "sandshim run python -c 'print(1)'" : "";
  record.decision = decision;
  record.reason = "test";
  record.rule = "tools.python";
  record.payload_bytes = 321;
  return record;
}

Store open_test_store(const fs::path& db, std::chrono::milliseconds busy_timeout) {
  return Store::open(StoreOptions{db, busy_timeout, false});
}

void add_run(Store& store, const RunRecord& record) {
  store.begin_run(record);
  store.complete_run(record);
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out << bytes;
}

void execute_sql(const fs::path& db, const std::string& sql) {
  RawConnection(db).execute(sql);
}

int64_t query_int(const fs::path& db, const std::string& sql) {
  return std::stoll(RawConnection(db).first_value(sql));
}

std::string query_text(const fs::path& db, const std::string& sql) {
  return RawConnection(db).first_value(sql);
}

std::string fatal_message(const std::function<void()>& body, int expected_code) {
  try {
    body();
  } catch (const Fatal& error) {
    CHECK(error.code() == expected_code);
    return error.what();
  }
  FAIL("expected a sandshim::Fatal");
  return "";
}

CommandResult run_audit(std::vector<std::string> args, const fs::path& db, bool tty) {
  std::ostringstream out;
  CommandResult result;
  try {
    result.code = audit_main(args, db, out, tty);
  } catch (const Fatal& error) {
    result.code = error.code();
    result.error = error.what();
  }
  result.out = out.str();
  return result;
}

ChildResult run_in_child(const std::function<void()>& body, bool unprivileged) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("test: pipe2 failed");
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (unprivileged) {
      become_nobody();
    }
    int code = 0;
    try {
      body();
    } catch (const Fatal& error) {
      std::string message = error.what();
      ssize_t ignored = ::write(fds[1], message.data(), message.size());
      (void)ignored;
      code = error.code();
    } catch (...) {
      code = 99;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    result.message.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string documented_row_hash(sqlite3_stmt* row, const char* kind, int first_column) {
  std::string bytes("sandshim-audit-chain-v1\0", 24);
  bytes += kind;
  bytes += '\0';
  auto append_big_endian = [&](uint64_t value) {
    for (int shift = 56; shift >= 0; shift -= 8) {
      bytes += static_cast<char>((value >> shift) & 0xff);
    }
  };
  // FIELDS.md: the columns added after schema 1 are left out while they are null.
  static const std::set<std::string> k_added = {"answer",    "permission_mode", "outcome",
                                                "limit_hit", "hidden_count",    "hidden_globs",
                                                "via",       "changed_count",   "changed_paths"};
  for (int column = first_column; column < sqlite3_column_count(row); ++column) {
    int type = sqlite3_column_type(row, column);
    if (type == SQLITE_NULL && k_added.contains(sqlite3_column_name(row, column))) {
      continue;
    }
    bytes += sqlite3_column_name(row, column);
    bytes += '\0';
    if (type == SQLITE_NULL) {
      bytes += 'N';
    } else if (type == SQLITE_INTEGER) {
      bytes += 'I';
      append_big_endian(static_cast<uint64_t>(sqlite3_column_int64(row, column)));
    } else {
      const auto* data = static_cast<const char*>(sqlite3_column_blob(row, column));
      auto size = static_cast<size_t>(sqlite3_column_bytes(row, column));
      bytes += type == SQLITE_TEXT ? 'T' : 'B';
      append_big_endian(size);
      bytes.append(data == nullptr ? "" : data, size);
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    static constexpr char k_digits[] = "0123456789abcdef";
    hex += k_digits[digest[i] >> 4];
    hex += k_digits[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace sandshim::audit::testing
