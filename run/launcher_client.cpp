#include "run/launcher_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "common/error.hpp"
#include "common/fd_passing.hpp"
#include "common/io.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "inside/launch_protocol.hpp"

namespace sandshim::shim {

namespace {

using launch::Hello;
using launch::k_magic;
using launch::Request;
using launch::Status;

constexpr long k_pipefs_magic = 0x50495045;

std::string connect_failure(const std::string& path, int error) {
  return "has no socket at " + quoted(path) + " (connect: " + std::strerror(error) + ")";
}

// Reads the hello, which the launcher writes as soon as it accepts, until `deadline_ms`.
std::string read_hello(int fd, Hello& hello, int64_t deadline_ms) {
  auto* bytes = reinterpret_cast<char*>(&hello);
  size_t got = 0;
  while (got < sizeof hello) {
    pollfd pfd{fd, POLLIN, 0};
    int64_t left = deadline_ms - monotonic_ms();
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) == 0) {
      return "did not answer within " + format_duration_ms(k_launcher_hello_timeout.count());
    }
    ssize_t n = ::recv(fd, bytes + got, sizeof hello - got, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    }
    if (n <= 0) {
      return "closed its socket without a hello";
    }
    got += static_cast<size_t>(n);
  }
  return "";
}

// The header with the command's three descriptors in one message.
bool send_header(int fd, const Request& request, const int (&fds)[launch::k_fd_count]) {
  return send_with_fds(fd, &request, sizeof request, fds, launch::k_fd_count) ==
         static_cast<ssize_t>(sizeof request);
}

bool read_status(int fd, Status& status) {
  auto* bytes = reinterpret_cast<char*>(&status);
  size_t got = 0;
  while (got < sizeof status) {
    ssize_t n = retry_on_eintr([&] { return ::read(fd, bytes + got, sizeof status - got); });
    if (n <= 0) {
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return status.magic == k_magic;
}

void say_in_child(int fd, const char* line) {
  ssize_t ignored = ::write(fd, line, std::strlen(line));
  (void)ignored;
}

// The forked client: only system calls from here (the shim may have threads), on data prepared
// before the fork.
[[noreturn]] void run_launch_client(int socket, pid_t parent, const Request& request,
                                    const std::string& payload, const int (&fds)[3]) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(exit_code::k_sandbox_error);
  }
  ::setpgid(0, 0);  // terminal signals reach only the shim, which forwards them
  Status status{};
  if (!send_header(socket, request, fds) ||
      !launch::send_all(socket, payload.data(), payload.size())) {
    say_in_child(fds[2], "sandshim: the warm container's launcher did not take the command\n");
    ::_exit(exit_code::k_sandbox_error);
  }
  if (!read_status(socket, status)) {
    ::_exit(128 + SIGKILL);  // the container ended under the command, as `docker exec` says it
  }
  ::_exit(status.exited != 0 ? status.value : 128 + status.value);
}

std::string payload_of(const RunSpec& spec, const std::vector<std::string>& env) {
  std::string payload = spec.cwd.string();
  payload += '\0';
  for (const auto& list : {&spec.command, &env}) {
    for (const auto& item : *list) {
      payload += item;
      payload += '\0';
    }
  }
  return payload;
}

}  // namespace

std::string launcher_socket_path(int64_t pid) {
  return "/proc/" + std::to_string(pid) + "/root" + launch::k_socket_in_container;
}

LauncherLink connect_launcher(int64_t pid, const std::string& token,
                              std::chrono::milliseconds timeout) {
  return connect_launcher_at(launcher_socket_path(pid), token, timeout);
}

LauncherLink connect_launcher_at(const std::string& path, const std::string& token,
                                 std::chrono::milliseconds timeout) {
  int64_t deadline_ms = monotonic_ms() + timeout.count();
  LauncherLink link;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (!fd.valid() ||
      ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    link.failure = connect_failure(path, errno);
    return link;
  }
  Hello hello{};
  link.failure = read_hello(fd.get(), hello, deadline_ms);
  if (link.failure.empty() && (hello.magic != k_magic || token.size() != launch::k_token_size ||
                               std::memcmp(hello.token, token.data(), launch::k_token_size) != 0)) {
    link.failure = "answered at " + quoted(path) + " with another token: it is not this run's";
  }
  if (link.failure.empty()) {
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    link.socket = std::move(fd);
  }
  return link;
}

std::vector<std::string> launch_environment(const std::vector<std::string>& launch_args,
                                            const RunSpec& spec) {
  std::vector<std::string> env;
  for (const auto& arg : launch_args) {
    if (!arg.starts_with("--env=")) {
      continue;
    }
    std::string entry = arg.substr(6);
    if (entry.find('=') != std::string::npos) {
      env.push_back(entry);
      continue;
    }
    for (const auto& [name, value] : spec.env) {
      if (name == entry) {
        env.push_back(name + "=" + value);
      }
    }
  }
  return env;
}

pid_t start_launch_client(UniqueFd socket, const RunSpec& spec, const std::vector<std::string>& env,
                          int in, int out, int err) {
  std::string payload = payload_of(spec, env);
  Request request{k_magic, static_cast<uint32_t>(spec.command.size()),
                  static_cast<uint32_t>(env.size()), static_cast<uint32_t>(payload.size())};
  if (payload.size() > launch::k_max_payload) {
    throw Fatal("the command and its environment are larger than " +
                format_byte_size(launch::k_max_payload) + "; nothing ran");
  }
  const int fds[3] = {in, out, err};
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Fatal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    run_launch_client(socket.get(), parent, request, payload, fds);
  }
  return pid;
}

bool stdin_may_pass(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return false;
  }
  if (S_ISCHR(st.st_mode)) {
    return st.st_rdev == makedev(1, 3);  // /dev/null
  }
  struct statfs fs {};
  return S_ISFIFO(st.st_mode) && ::fstatfs(fd, &fs) == 0 && fs.f_type == k_pipefs_magic;
}

}  // namespace sandshim::shim
