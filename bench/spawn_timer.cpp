// Runs a command N times, each with stdin from a file and stdout/stderr discarded, and prints
// each run's wall time and CPU time (user + system) in milliseconds, one run per line
// (bench/hook.sh turns them into p50/p95). CPU time hardly depends on the machine's load.
// A process of its own so that no shell's fork and exec are counted in what is measured.
//
//   sandshim_spawn_timer N INPUT_FILE COMMAND [ARG...]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

double to_ms(const timeval& time) {
  return static_cast<double>(time.tv_sec) * 1000.0 + static_cast<double>(time.tv_usec) / 1000.0;
}

// Prints one run's wall and CPU milliseconds; exits with a message when the command fails.
void time_one_run(char** argv, const char* input) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, input, O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv, environ) != 0) {
    std::fprintf(stderr, "spawn_timer: cannot start %s\n", argv[0]);
    std::exit(2);
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
  if (argc < 4) {
    std::fprintf(stderr, "usage: sandshim_spawn_timer N INPUT_FILE COMMAND [ARG...]\n");
    return 2;
  }
  int runs = std::atoi(argv[1]);
  for (int i = 0; i < runs; ++i) {
    time_one_run(argv + 3, argv[2]);
  }
  return 0;
}
