#include "broker/audit_keeper.hpp"

#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "audit/sqlite.hpp"

namespace sandshim::broker {

namespace {

namespace fs = std::filesystem;

// A fresh install has no database until its first run: until then the keeper looks every 2 s.
constexpr auto k_database_poll = std::chrono::seconds(2);
constexpr auto k_busy_timeout = std::chrono::milliseconds(5000);

void wait_until_exists(const fs::path& db) {
  std::error_code ec;
  while (!fs::exists(db, ec)) {
    std::this_thread::sleep_for(k_database_poll);
  }
}

// The child: nothing of the daemon's but the path; dies with the daemon.
[[noreturn]] void keep_open(const fs::path& db) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_NAME, "sandshim-audit");
  ::close_range(3, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  wait_until_exists(db);
  try {
    audit::Database connection(db, audit::OpenMode::read_write, k_busy_timeout);
    connection.skip_checkpoint_on_close();
    connection.query_int("PRAGMA user_version", "map its WAL index");  // a read, then idle
    for (;;) {
      ::pause();
    }
  } catch (const std::exception& e) {
    spdlog::warn("the audit keeper stopped: {}; runs open the audit database more slowly",
                 e.what());
  }
  ::_exit(1);
}

}  // namespace

pid_t start_audit_keeper(const fs::path& db) {
  pid_t daemon = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::getppid() != daemon) {
      ::_exit(0);  // the daemon died before PR_SET_PDEATHSIG was set
    }
    keep_open(db);
  }
  if (pid < 0) {
    spdlog::warn("cannot start the audit keeper: fork failed: {}", std::strerror(errno));
    return 0;
  }
  spdlog::info("audit keeper {} holds {} open", pid, db.string());
  return pid;
}

}  // namespace sandshim::broker
