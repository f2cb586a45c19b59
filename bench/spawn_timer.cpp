// Runs a command N times, each with stdin from a file and stdout/stderr discarded, and prints
// each run's wall time and CPU time (user + system) in milliseconds, one run per line
// (bench/hook.sh turns them into p50/p95). CPU time hardly depends on the machine's load.
// A process of its own so that no shell's fork and exec are counted in what is measured.
// With --pipe, stdout and stderr go to one pipe that the timer reads to its end before it waits,
// as an agent's tool captures a command's output: a run ends for the caller when the last
// holder of its output lets go, not when the command's own process exits.
//
//   sandshim_spawn_timer [--pipe] N INPUT_FILE COMMAND [ARG...]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

double to_ms(const timeval& time) {
  return static_cast<double>(time.tv_sec) * 1000.0 + static_cast<double>(time.tv_usec) / 1000.0;
}

// Reads a pipe to its end, discarding what comes.
void drain(int fd) {
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EINTR)) {
      return;
    }
  }
}

// Prints one run's wall and CPU milliseconds; exits with a message when the command fails.
void time_one_run(char** argv, const char* input, bool pipe_output) {
  int output[2] = {-1, -1};
  if (pipe_output && pipe2(output, O_CLOEXEC) != 0) {
    std::perror("spawn_timer: pipe");
    std::exit(2);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, input, O_RDONLY, 0);
  if (pipe_output) {
    posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, output[1], STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv, environ) != 0) {
    std::fprintf(stderr, "spawn_timer: cannot start %s\n", argv[0]);
    std::exit(2);
  }
  if (pipe_output) {
    close(output[1]);
    drain(output[0]);
    close(output[0]);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  auto elapsed = std::chrono::steady_clock::now() - start;
  posix_spawn_file_actions_destroy(&actions);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "spawn_timer: %s failed (wait status %d)\n", argv[0], status);
    std::exit(1);
  }
  std::printf("%.3f %.3f\n", std::chrono::duration<double, std::milli>(elapsed).count(),
              to_ms(usage.ru_utime) + to_ms(usage.ru_stime));
}

}  // namespace

int main(int argc, char** argv) {
  bool pipe_output = argc > 1 && std::strcmp(argv[1], "--pipe") == 0;
  if (pipe_output) {
    --argc;
    ++argv;
  }
  if (argc < 4) {
    std::fprintf(stderr, "usage: sandshim_spawn_timer [--pipe] N INPUT_FILE COMMAND [ARG...]\n");
    return 2;
  }
  int runs = std::atoi(argv[1]);
  for (int i = 0; i < runs; ++i) {
    time_one_run(argv + 3, argv[2], pipe_output);
  }
  return 0;
}
