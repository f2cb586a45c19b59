#include "common/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/io.hpp"
#include "common/unique_fd.hpp"

namespace sandshim {

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Fatal(std::string("pipe2 failed: ") + std::strerror(errno));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

namespace {

std::vector<char*> to_c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (const auto& s : strings) {
    result.push_back(const_cast<char*>(s.c_str()));
  }
  result.push_back(nullptr);
  return result;
}

// dup2 clears close-on-exec on the target; a same-fd "redirect" must clear it by hand.
void redirect(int from, int to) {
  if (from < 0) {
    return;
  }
  if (from == to) {
    ::fcntl(to, F_SETFD, 0);
  } else {
    ::dup2(from, to);
  }
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const SpawnOptions& options, char* const* argv, char* const* envp,
                             int error_fd, pid_t parent) {
  if (options.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(127);
    }
  }
  if (options.new_process_group) {
    ::setpgid(0, 0);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
    ::signal(sig, SIG_DFL);
  }
  redirect(options.stdin_fd, STDIN_FILENO);
  redirect(options.stdout_fd, STDOUT_FILENO);
  redirect(options.stderr_fd, STDERR_FILENO);
  if (options.cwd.empty() || ::chdir(options.cwd.c_str()) == 0) {
    ::execve(argv[0], argv, envp);
  }
  int err = errno;
  ssize_t ignored = ::write(error_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

pid_t spawn(const SpawnOptions& options) {
  if (options.argv.empty()) {
    throw Fatal("internal error: spawn without a program");
  }
  auto argv = to_c_strings(options.argv);
  auto envp = to_c_strings(options.env);
  Pipe error_pipe = make_pipe();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Fatal("cannot start " + options.argv[0] + ": fork failed: " + std::strerror(errno));
  }
  if (pid == 0) {
    exec_child(options, argv.data(), envp.data(), error_pipe.write.get(), parent);
  }
  error_pipe.write.reset();
  int child_errno = 0;
  ssize_t n = retry_on_eintr(
      [&] { return ::read(error_pipe.read.get(), &child_errno, sizeof child_errno); });
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    wait_for(pid);
    throw Fatal("cannot execute " + options.argv[0] + ": " + std::strerror(child_errno));
  }
  return pid;
}

ExitStatus decode_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    return ExitStatus{128 + WTERMSIG(status), WTERMSIG(status)};
  }
  return ExitStatus{WEXITSTATUS(status), std::nullopt};
}

ExitStatus wait_for(pid_t pid) {
  int status = 0;
  if (retry_on_eintr([&] { return ::waitpid(pid, &status, 0); }) < 0) {
    return ExitStatus{exit_code::k_sandbox_error, std::nullopt};
  }
  return decode_wait_status(status);
}

namespace {

// Appends what is readable on fd; returns false at end of file.
bool drain_into(int fd, std::string& sink, size_t max_bytes) {
  char buffer[8192];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n < 0) {
    return errno == EINTR || errno == EAGAIN;
  }
  if (n == 0) {
    return false;
  }
  size_t room = max_bytes > sink.size() ? max_bytes - sink.size() : 0;
  sink.append(buffer, std::min(room, static_cast<size_t>(n)));
  return true;
}

// Reads stdout and stderr together (so neither pipe fills and blocks the child) until both close;
// false when the deadline passed first.
bool capture_until(int out_fd, int err_fd, int64_t deadline, size_t max_bytes,
                   CapturedRun& result) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_streams = 2;
  while (open_streams > 0) {
    int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      return false;
    }
    int ready = ::poll(fds, 2, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        if (!drain_into(fds[i].fd, i == 0 ? result.out : result.err, max_bytes)) {
          fds[i].fd = -1;
          --open_streams;
        }
      }
    }
  }
  return true;
}

}  // namespace

CapturedRun run_captured(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::chrono::milliseconds timeout, size_t max_bytes,
                         const std::string& cwd) {
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  SpawnOptions options{argv, env, null_in.get(), out.write.get(), err.write.get(), false,
                       true, cwd};
  pid_t pid = spawn(options);
  out.write.reset();
  err.write.reset();

  CapturedRun result;
  if (!capture_until(out.read.get(), err.read.get(), monotonic_ms() + timeout.count(), max_bytes,
                     result)) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);
  }
  result.status = wait_for(pid);
  return result;
}

int64_t monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t wall_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : std::to_string(sig);
}

}  // namespace sandshim
