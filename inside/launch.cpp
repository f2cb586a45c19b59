// sandshim-launch: the command of a warm container. It waits, as the container's user, on a unix
// socket in the container's /tmp (through a broker: in the broker's directory mounted at
// /.sandshim/launch, for the broker's uid only), serves exactly one run (argv, environment, cwd and
// stdio from the shim; the exit status back), and ends, which ends the container. Static and libc
// only, so it runs in any image.
//
//   SANDSHIM_LAUNCH_TOKEN=… sandshim-launch IDLE_SECONDS

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fd_passing.hpp"
#include "inside/launch_protocol.hpp"

extern char** environ;

namespace {

using namespace sandshim::launch;

constexpr int k_usage_error = 2;
constexpr int k_not_found = 127;
constexpr int k_cannot_execute = 126;
constexpr int k_signals_ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};

[[noreturn]] void die(const char* what) {
  dprintf(2, "sandshim-launch: %s: %s\n", what, strerror(errno));
  _exit(1);
}

// The signals the shim forwards with `kill -1` from inside reach the command, not its launcher.
void set_signals(void (*disposition)(int)) {
  for (int sig : k_signals_ignored) {
    signal(sig, disposition);
  }
}

// Who may connect, and where. Through a broker the socket is open to every uid that can reach
// its directory (the broker's, as another uid than the container's), and `admit` decides.
struct Listening {
  const char* path = k_socket_in_container;
  bool broker = false;
  uid_t admit = 0;
};

Listening listening_from_environment() {
  Listening listening;
  const char* path = getenv(k_socket_variable);
  const char* admit = getenv(k_admit_variable);
  if (path != nullptr && admit != nullptr) {
    listening.path = path;
    listening.broker = true;
    listening.admit = static_cast<uid_t>(strtoul(admit, nullptr, 10));
  }
  unsetenv(k_socket_variable);
  unsetenv(k_admit_variable);
  return listening;
}

int listen_on(const Listening& listening) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  snprintf(address.sun_path, sizeof address.sun_path, "%s", listening.path);
  unlink(address.sun_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  mode_t mask = umask(0);  // the broker's uid needs write access to connect
  if (!listening.broker) {
    umask(mask);
  }
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, 1) != 0) {
    die("listen");
  }
  umask(mask);
  return fd;
}

// Direct mode: the container's user and root (the caller of a root shim). Through a broker only
// the broker's uid: the caller's other processes reach the socket through /proc/PID/root too.
bool admitted(const Listening& listening, uid_t peer) {
  return listening.broker ? peer == listening.admit : (peer == getuid() || peer == 0);
}

int64_t monotonic_ms() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// The shim's connection, or none within the idle time (the container then ends by itself). A
// peer that is not admitted is hung up on without a word, and the launcher waits on.
int accept_shim(int listener, const Listening& listening, int idle_seconds) {
  int64_t deadline = monotonic_ms() + static_cast<int64_t>(idle_seconds) * 1000;
  for (;;) {
    pollfd pfd{listener, POLLIN, 0};
    int64_t left = deadline - monotonic_ms();
    int ready = left > 0 ? poll(&pfd, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      _exit(0);
    }
    int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    ucred peer{};
    socklen_t size = sizeof peer;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
      die("accept");
    }
    if (admitted(listening, peer.uid)) {
      return fd;
    }
    close(fd);
  }
}

// The request header and its descriptors, received in one message.
bool receive_header(int fd, Request& request, int (&fds)[k_fd_count]) {
  sandshim::Received received =
      sandshim::receive_with_fds(fd, &request, sizeof request, MSG_WAITALL);
  if (received.bytes != static_cast<ssize_t>(sizeof request) || !received.complete ||
      received.fd_count != k_fd_count) {
    for (size_t i = 0; i < received.fd_count; ++i) {
      close(received.fds[i]);
    }
    return false;
  }
  memcpy(fds, received.fds, sizeof fds);
  return request.magic == k_magic && request.payload_bytes <= k_max_payload;
}

// Splits the payload into the cwd, argv and the request's environment (pointers into it).
bool split_payload(char* payload, const Request& request, char**& argv, char**& env,
                   const char*& cwd) {
  size_t count = 1 + request.argc + request.envc;
  auto** strings = static_cast<char**>(calloc(count + 2, sizeof(char*)));
  char* at = payload;
  char* end = payload + request.payload_bytes;
  for (size_t i = 0; i < count; ++i) {
    char* nul = static_cast<char*>(memchr(at, '\0', static_cast<size_t>(end - at)));
    if (strings == nullptr || nul == nullptr) {
      return false;
    }
    strings[i + (i > request.argc ? 1 : 0)] = at;  // a null pointer ends argv
    at = nul + 1;
  }
  cwd = strings[0];
  argv = strings + 1;
  env = strings + request.argc + 2;
  return request.argc > 0;
}

size_t name_length(const char* entry) {
  const char* equals = strchr(entry, '=');
  return equals != nullptr ? static_cast<size_t>(equals - entry) : strlen(entry);
}

bool overridden(const char* entry, char** env) {
  size_t length = name_length(entry);
  for (char** e = env; *e != nullptr; ++e) {
    if (name_length(*e) == length && strncmp(*e, entry, length) == 0) {
      return true;
    }
  }
  return false;
}

// The container's environment (as `docker exec` gives it) with the request's entries on top.
char** merged_environment(char** env) {
  size_t count = 0;
  for (char** e = environ; *e != nullptr; ++e) {
    ++count;
  }
  for (char** e = env; *e != nullptr; ++e) {
    ++count;
  }
  auto** merged = static_cast<char**>(calloc(count + 1, sizeof(char*)));
  if (merged == nullptr) {
    die("calloc");
  }
  size_t n = 0;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!overridden(*e, env)) {
      merged[n++] = *e;
    }
  }
  for (char** e = env; *e != nullptr; ++e) {
    merged[n++] = *e;
  }
  return merged;
}

// In the forked child: the command's stdio, cwd, environment and default signals, then exec.
[[noreturn]] void exec_command(const int (&fds)[k_fd_count], char** argv, char** env,
                               const char* cwd) {
  set_signals(SIG_DFL);
  for (int i = 0; i < k_fd_count; ++i) {
    if (dup2(fds[i], i) != i) {
      _exit(k_cannot_execute);
    }
  }
  if (chdir(cwd) != 0) {
    dprintf(2, "sandshim-launch: cannot enter %s: %s\n", cwd, strerror(errno));
    _exit(k_cannot_execute);
  }
  environ = merged_environment(env);
  execvp(argv[0], argv);
  int code = errno == ENOENT ? k_not_found : k_cannot_execute;
  dprintf(2, "sandshim-launch: %s: %s\n", argv[0],
          errno == ENOENT ? "executable file not found in $PATH" : strerror(errno));
  _exit(code);
}

Status wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      die("waitpid");
    }
  }
  if (WIFSIGNALED(status)) {
    return Status{k_magic, 0, WTERMSIG(status)};
  }
  return Status{k_magic, 1, WEXITSTATUS(status)};
}

// One run: hello, request, fork and exec, then the status.
int serve(int connection, const char* token) {
  Hello hello{k_magic, {}};
  memcpy(hello.token, token, k_token_size);
  Request request{};
  int fds[k_fd_count] = {-1, -1, -1};
  if (!send_all(connection, &hello, sizeof hello) || !receive_header(connection, request, fds)) {
    return 1;
  }
  auto* payload = static_cast<char*>(malloc(request.payload_bytes + 1));
  char** argv = nullptr;
  char** env = nullptr;
  const char* cwd = nullptr;
  if (payload == nullptr || !read_all(connection, payload, request.payload_bytes) ||
      !split_payload(payload, request, argv, env, cwd)) {
    return 1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    die("fork");
  }
  if (pid == 0) {
    exec_command(fds, argv, env, cwd);
  }
  for (int fd : fds) {
    close(fd);  // the command's stdio ends with the command's processes, not with the launcher
  }
  Status status = wait_status(pid);
  return send_all(connection, &status, sizeof status) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* variable = getenv(k_token_variable);
  if (argc != 2 || variable == nullptr || strlen(variable) != k_token_size) {
    dprintf(2, "usage: %s=TOKEN sandshim-launch IDLE_SECONDS\n", k_token_variable);
    return k_usage_error;
  }
  char token[k_token_size + 1];
  memcpy(token, variable, sizeof token);
  unsetenv(k_token_variable);
  set_signals(SIG_IGN);
  Listening listening = listening_from_environment();
  int listener = listen_on(listening);
  int connection = accept_shim(listener, listening, atoi(argv[1]));
  close(listener);  // one run per container: nobody else connects, not even the command
  unlink(listening.path);
  return serve(connection, token);
}
