#include "run/guardian.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <vector>

#include "audit/store.hpp"
#include "common/error.hpp"
#include "common/process.hpp"
#include "engine/api_client.hpp"
#include "engine/client_output.hpp"
#include "engine/engine_client.hpp"

namespace sandshim::shim {

namespace {

constexpr int64_t k_remove_grace_ms = 2000;
constexpr int64_t k_attempt_timeout_ms = 20'000;
// How long work that waits for its caller's exit waits at most (the caller's last steps after
// handing the work over are an audit row and its exit: milliseconds, unless the machine is loaded).
constexpr int64_t k_caller_exit_patience_ms = 1000;

// Waits until every writer of the pipe `read_fd` has closed it (EOF), or until `until_ms`.
void wait_for_end_of(int read_fd, int64_t until_ms) {
  char byte = 0;
  for (int64_t now = monotonic_ms(); now < until_ms; now = monotonic_ms()) {
    pollfd fd{read_fd, POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(until_ms - now));
    if (ready == 0 || (ready > 0 && ::read(read_fd, &byte, 1) <= 0)) {
      return;
    }
  }
}

// Writers this process keeps open until it exits: their readers learn of its exit by EOF.
std::vector<UniqueFd>& held_until_exit() {
  static std::vector<UniqueFd> held;
  return held;
}

// The read end of a pipe whose write end this process holds until it exits (made once per
// process: a forked child that calls this gets its own).
int caller_exit_fd() {
  static pid_t owner = 0;
  static int read_fd = -1;
  if (owner != ::getpid()) {
    Pipe pipe = make_pipe();
    read_fd = pipe.read.release();
    held_until_exit().push_back(std::move(pipe.write));
    owner = ::getpid();
  }
  return read_fd;
}

// The first processes of detached work, not waited for when they are started (each wait was a
// hand-over between processes on the caller's path): collected once they have exited.
std::vector<pid_t>& unreaped_middles() {
  static std::vector<pid_t> pids;
  return pids;
}

void reap_exited_middles() {
  std::erase_if(unreaped_middles(),
                [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; });
}

// How the guardian reaches the engine: its API socket, or its client.
struct Remover {
  const Engine& engine;
  std::optional<engine::Transport> api_transport;
};

// One removal attempt; true when the engine answered that the container is gone. Over the API,
// a socket nobody answers on (moved, or no permission) falls back to the client for that attempt;
// never over ssh, where the client would start an ssh of its own (ssh_connect.hpp).
bool remove_once(const Remover& remover, const std::string& name) {
  std::chrono::milliseconds timeout(k_attempt_timeout_ms);
  if (remover.api_transport) {
    engine::Reply reply = engine::ApiClient(*remover.api_transport, timeout).remove(name);
    if (reply.fault != engine::Fault::unreachable ||
        std::holds_alternative<engine::SshEndpoint>(*remover.api_transport)) {
      return removal_confirmed(reply);
    }
  }
  EngineReply reply = EngineClient(remover.engine).remove(name, timeout);
  return removal_confirmed(!reply.answered, reply.code, reply.err);
}

// The shim's word on the pipe before the deadline ('D' done, 'R' or 'L' remove now); 0 when the
// pipe closed or the deadline passed without one.
char word_before(int read_fd, int64_t deadline_ms) {
  pollfd fd{read_fd, POLLIN, 0};
  int64_t now = monotonic_ms();
  int ready = 0;
  while (now < deadline_ms) {
    ready = ::poll(&fd, 1, static_cast<int>(std::min<int64_t>(deadline_ms - now, 60'000)));
    if (ready != 0) {
      break;
    }
    now = monotonic_ms();
  }
  char byte = 0;
  if (ready > 0 && ::read(read_fd, &byte, 1) == 1) {
    return byte;
  }
  return 0;
}

// Removes the container, then again with backoff until the deadline and its grace have passed
// and the engine has confirmed the removal; stops at the first confirmation when `asked`.
[[noreturn]] void remove_until_confirmed(const Remover& remover, const std::string& name,
                                         int64_t deadline_ms, bool asked) {
  int64_t backoff = 250;
  for (;;) {
    bool confirmed = remove_once(remover, name);
    if (confirmed && asked) {
      ::_exit(0);
    }
    int64_t now = monotonic_ms();
    if (guardian_may_stop(now, deadline_ms + k_remove_grace_ms, confirmed)) {
      ::_exit(0);
    }
    int64_t sleep_ms = now < deadline_ms + k_remove_grace_ms
                           ? std::min(backoff, deadline_ms + k_remove_grace_ms - now + 1)
                           : backoff;
    ::usleep(static_cast<useconds_t>(sleep_ms * 1000));
    backoff = std::min<int64_t>(backoff * 2, 4000);
  }
}

// After the shim died or handed over, the container may still be on its way up: remove it now,
// then again with backoff until the deadline has passed and the engine has confirmed the
// removal. An engine that does not answer (stopped, paused, restarting) is retried for longer.
[[noreturn]] void guard(const Remover& remover, const std::string& name, int read_fd,
                        int64_t deadline_ms) {
  char byte = word_before(read_fd, deadline_ms);
  if (byte == 'D') {
    ::_exit(0);
  }
  bool asked = byte == 'R' || byte == 'L';  // the run is over: once removed, nothing is left
  if (byte == 'L') {
    // The engine client this removal starts costs more CPU than the rest of the caller's run:
    // it waits until the caller has exited (the pipe's end closes), a little at most.
    wait_for_end_of(read_fd, std::min(deadline_ms, monotonic_ms() + k_caller_exit_patience_ms));
  }
  remove_until_confirmed(remover, name, deadline_ms, asked);
}

void detach_from_caller(int keep_fd) {
  ::setsid();
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int std_fd : {0, 1, 2}) {
    ::dup2(null_fd, std_fd);
  }
  if (keep_fd > 3) {
    ::close_range(3, static_cast<unsigned>(keep_fd) - 1, 0);
  }
  ::close_range(static_cast<unsigned>(std::max(keep_fd, 2)) + 1, ~0U, 0);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

void run_detached(const std::function<void()>& work, int keep_fd) {
  reap_exited_middles();
  pid_t middle = ::fork();
  if (middle < 0) {
    throw Fatal(std::string("cannot start a detached process: fork failed: ") +
                std::strerror(errno));
  }
  if (middle == 0) {
    // Double fork: the worker is nobody's child that waits, and outlives the shim.
    if (::fork() == 0) {
      detach_from_caller(keep_fd);
      try {
        work();
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    ::_exit(0);
  }
  unreaped_middles().push_back(middle);  // it exits at once; reaped later, or by init after us
}

void fold_audit_wal_after_exit(const std::filesystem::path& db) {
  if (!audit::wal_needs_folding(db)) {
    return;
  }
  try {
    run_detached_after_exit([db](const std::function<void()>& wait_for_caller) {
      wait_for_caller();
      audit::fold_wal_of(db);
    });
  } catch (const Fatal&) {
    // No process to spare: the next writer finds the WAL large and folds it.
  }
}

void run_detached_after_exit(const std::function<void(const std::function<void()>&)>& work) {
  int exit_fd = caller_exit_fd();
  run_detached(
      [&] {
        work([exit_fd] { wait_for_end_of(exit_fd, monotonic_ms() + k_caller_exit_patience_ms); });
      },
      exit_fd);
}

Guardian Guardian::start(const Engine& engine, const std::string& container_name,
                         int64_t deadline_monotonic_ms,
                         std::optional<engine::Transport> api_transport) {
  Pipe pipe = make_pipe();
  int read_fd = pipe.read.get();
  Remover remover{engine, std::move(api_transport)};
  run_detached(
      [&] {
        pipe.write.reset();
        guard(remover, container_name, read_fd, deadline_monotonic_ms);
      },
      read_fd);
  return Guardian(std::move(pipe.write));
}

Guardian::~Guardian() = default;

void Guardian::release() {
  if (m_done.valid()) {
    char done = 'D';
    ssize_t ignored = ::write(m_done.get(), &done, 1);
    (void)ignored;
    m_done.reset();
  }
}

void Guardian::remove_now() {
  if (m_done.valid()) {
    char remove = 'R';
    ssize_t ignored = ::write(m_done.get(), &remove, 1);
    (void)ignored;
    m_done.reset();
  }
}

void Guardian::remove_after_exit() {
  if (m_done.valid()) {
    char later = 'L';
    ssize_t ignored = ::write(m_done.get(), &later, 1);
    (void)ignored;
    held_until_exit().push_back(std::move(m_done));
  }
}

bool removal_confirmed(bool timed_out, int exit_code, const std::string& engine_stderr) {
  if (timed_out) {
    return false;
  }
  // docker answers 0 for a container already gone; podman may name it instead.
  return exit_code == 0 || reports_container_gone(engine_stderr);
}

bool removal_confirmed(const engine::Reply& reply) {
  return reply.ok() || (reply.answered() && reply.status == 404);
}

bool guardian_may_stop(int64_t now_ms, int64_t settled_ms, bool confirmed) {
  return (now_ms > settled_ms && confirmed) || now_ms > settled_ms + k_unanswered_patience_ms;
}

std::vector<std::string> signal_arguments(const RunSpec& spec, const std::string& signal) {
  if (spec.warm) {
    return {"exec", "--user=" + spec.user,      spec.container_name(), "sh",
            "-c",   "kill -s " + signal + " -1"};
  }
  return {"kill", "--signal=" + signal, spec.container_name()};
}

}  // namespace sandshim::shim
