#include "shim/guardian.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>

#include "common/error.hpp"
#include "common/process.hpp"
#include "engine/api_client.hpp"
#include "shim/engine_api.hpp"
#include "shim/engine_client.hpp"

namespace sandshim::shim {

namespace {

constexpr int64_t k_remove_grace_ms = 2000;
constexpr int64_t k_attempt_timeout_ms = 20'000;

// How the guardian reaches the engine: its API socket, or its client.
struct Remover {
  const Engine& engine;
  std::optional<std::filesystem::path> api_socket;
};

// One removal attempt; true when the engine answered that the container is gone. Over the API,
// a socket nobody answers on (moved, or no permission) falls back to the client for that attempt.
bool remove_once(const Remover& remover, const std::string& name) {
  std::chrono::milliseconds timeout(k_attempt_timeout_ms);
  if (remover.api_socket) {
    engine::Reply reply = engine::ApiClient(*remover.api_socket, timeout).remove(name);
    if (reply.fault != engine::Fault::unreachable) {
      return removal_confirmed(reply);
    }
  }
  EngineReply reply = EngineClient(remover.engine).remove(name, timeout);
  return removal_confirmed(!reply.answered, reply.code, reply.err);
}

// After the shim died or handed over, the container may still be on its way up: remove it now,
// then again with backoff until the deadline has passed and the engine has confirmed the
// removal. An engine that does not answer (stopped, paused, restarting) is retried for longer.
[[noreturn]] void guard(const Remover& remover, const std::string& name, int read_fd,
                        int64_t deadline_ms) {
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
  if (ready > 0 && ::read(read_fd, &byte, 1) == 1 && byte == 'D') {
    ::_exit(0);
  }
  bool asked = byte == 'R';  // the run is over: once removed, nothing is left to guard
  int64_t backoff = 250;
  for (;;) {
    bool confirmed = remove_once(remover, name);
    if (confirmed && asked) {
      ::_exit(0);
    }
    now = monotonic_ms();
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
  wait_for(middle);
}

Guardian Guardian::start(const Engine& engine, const std::string& container_name,
                         int64_t deadline_monotonic_ms,
                         std::optional<std::filesystem::path> api_socket) {
  Pipe pipe = make_pipe();
  int read_fd = pipe.read.get();
  Remover remover{engine, std::move(api_socket)};
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

bool removal_confirmed(bool timed_out, int exit_code, const std::string& engine_stderr) {
  if (timed_out) {
    return false;
  }
  // docker answers 0 for a container already gone; podman may name it instead.
  std::string lower = engine_stderr;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return exit_code == 0 || lower.find("no such container") != std::string::npos ||
         lower.find("no container with name or id") != std::string::npos;
}

bool removal_confirmed(const engine::Reply& reply) {
  return reply.ok() || (reply.answered() && reply.status == 404);
}

std::optional<std::filesystem::path> removal_api_socket(const Engine& engine,
                                                        const Policy& policy) {
  if (policy.engine_api != EngineApi::on || engine.dialect.is_podman()) {
    return std::nullopt;
  }
  return engine_api_socket(engine);
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
