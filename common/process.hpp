#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sandshim {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] must be an absolute path: no PATH search happens
  std::vector<std::string> env;   // the complete environment, NAME=VALUE
  int stdin_fd = -1;              // -1: inherit
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool new_process_group = false;  // keep terminal signals from reaching the child
  bool die_with_parent = false;    // SIGKILL the child if the spawning thread dies
  std::string cwd;                 // the child's working directory; empty: the caller's
};

// Starts a program; throws Fatal naming the program and errno when it cannot be executed.
pid_t spawn(const SpawnOptions& options);

// How a child ended, in shell convention: exit status, or 128 + signal.
struct ExitStatus {
  int code = 0;
  std::optional<int> signal;
};
ExitStatus decode_wait_status(int status);

// Waits for a child, retrying on EINTR.
ExitStatus wait_for(pid_t pid);

struct CapturedRun {
  ExitStatus status;
  std::string out;
  std::string err;
  bool timed_out = false;
};

// Runs a short helper command to completion with its output captured (bounded by max_bytes).
// `cwd`: the child's working directory (empty: the caller's).
CapturedRun run_captured(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::chrono::milliseconds timeout, size_t max_bytes = 1 << 20,
                         const std::string& cwd = {});

// Milliseconds on the monotonic clock; deadlines are measured with it.
int64_t monotonic_ms();
// Milliseconds since the Unix epoch, for records.
int64_t wall_clock_ms();

// "SIGTERM" for 15; the number itself when the signal has no name.
std::string signal_name(int sig);

}  // namespace sandshim
