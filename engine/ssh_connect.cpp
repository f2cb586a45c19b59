#include "engine/ssh_connect.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/process.hpp"
#include "common/strings.hpp"

namespace sandshim::engine::detail {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::array<const char*, 3> k_ssh_clients = {"/usr/bin/ssh", "/bin/ssh",
                                                      "/usr/local/bin/ssh"};

// Every option says what a sandbox's transport must not do: read a configuration file (-F none),
// prompt, accept a host key it does not know, use an agent, forward anything, multiplex, run a
// local command or request a terminal. A dead server ends the connection within 30 s.
constexpr std::array<const char*, 16> k_fixed_options = {
    "BatchMode=yes",           "StrictHostKeyChecking=yes",
    "UpdateHostKeys=no",       "IdentityAgent=none",
    "ForwardAgent=no",         "ForwardX11=no",
    "ClearAllForwardings=yes", "ControlMaster=no",
    "ControlPath=none",        "PermitLocalCommand=no",
    "RequestTTY=no",           "LogLevel=ERROR",
    "ServerAliveInterval=15",  "ServerAliveCountMax=2",
    "EscapeChar=none",         "ProxyCommand=none"};

// A run that closed its end leaves ssh this long to pass on what it sent (a removal) and end by
// itself; then it is ended, so no ssh outlives its run behind a hung engine.
constexpr auto k_orphan_grace = 3s;

// ssh's messages in English whatever the caller's locale; nothing else of an environment.
constexpr std::array<const char*, 3> k_ssh_environment = {"PATH=/usr/bin:/bin", "LANG=C",
                                                          "LC_ALL=C"};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const auto& text : strings) {
    pointers.push_back(const_cast<char*>(text.c_str()));
  }
  pointers.push_back(nullptr);
  return pointers;
}

// The ssh process: its stdin and stdout the socket, its stderr the diagnostics pipe, nothing
// else open, default signals. Only async-signal-safe calls: the caller may have threads.
[[noreturn]] void exec_ssh(char* const* argv, char* const* env, int socket, int diagnostics) {
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(socket, STDIN_FILENO);
  ::dup2(socket, STDOUT_FILENO);
  ::dup2(diagnostics, STDERR_FILENO);
  ::syscall(SYS_close_range, 3U, ~0U, 0U);
  ::execve(argv[0], argv, env);
  constexpr std::string_view k_cannot = "ssh: cannot execute the ssh client\n";
  (void)!::write(STDERR_FILENO, k_cannot.data(), k_cannot.size());
  ::_exit(127);
}

// Waits until ssh exits, or until the run's end of the socket is closed (the run ended), then
// gives ssh k_orphan_grace to finish before ending it.
void watch_ssh(pid_t ssh, int socket) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ssh, 0U));
  std::array<pollfd, 2> watched = {{{pidfd, POLLIN, 0}, {socket, 0, 0}}};
  while (::poll(watched.data(), watched.size(), pidfd < 0 ? 200 : -1) >= 0 &&
         ::waitpid(ssh, nullptr, WNOHANG) == 0) {
    if ((watched[1].revents & (POLLHUP | POLLERR)) != 0) {
      ::close(socket);
      ::poll(watched.data(), 1,
             static_cast<int>(std::chrono::milliseconds(k_orphan_grace).count()));
      ::kill(ssh, SIGTERM);
      ::waitpid(ssh, nullptr, 0);
      return;
    }
  }
}

// The watcher's process (its own session: no terminal, no terminal's signals), and ssh its
// child; it ends when ssh does, so the run reads the end of the connection then.
[[noreturn]] void run_watcher(char* const* argv, char* const* env, int socket, int diagnostics) {
  ::setsid();
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  pid_t ssh = ::fork();
  if (ssh == 0) {
    exec_ssh(argv, env, socket, diagnostics);
  }
  ::close(diagnostics);
  if (ssh > 0) {
    ::syscall(SYS_close_range, 0U, static_cast<unsigned>(socket) - 1, 0U);
    ::syscall(SYS_close_range, static_cast<unsigned>(socket) + 1, ~0U, 0U);
    watch_ssh(ssh, socket);
  }
  ::_exit(0);
}

SshConnection failure(const std::string& what) {
  return {-1, -1, Fault::unreachable, what + ": " + std::strerror(errno)};
}

// A line of `text` containing `pattern`, trimmed; empty when none does.
std::string line_with(const std::string& text, std::string_view pattern) {
  auto at = text.find(pattern);
  if (at == std::string::npos) {
    return "";
  }
  auto begin = text.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return trim(std::string_view(text).substr(begin, text.find('\n', at) - begin));
}

struct SshFailureKind {
  std::vector<std::string_view> patterns;
  const char* what;  // follows "ssh://…: "
  const char* fix;
};

const std::array<SshFailureKind, 6>& failure_kinds() {
  static const std::array<SshFailureKind, 6> kinds = {{
      {{"IDENTIFICATION HAS CHANGED"},
       "its host key changed since known_hosts took it",
       "find out why on that machine before you replace its key in known_hosts"},
      {{"host key is known for", "Host key verification failed"},
       "its host key is not in known_hosts",
       "check its fingerprint on that machine, then add it to known_hosts (engine.ssh_known_hosts "
       "or ssh_known_hosts= of its entry; nothing is accepted on first sight)"},
      {{"Permission denied (", "Too many authentication failures"},
       "the login was refused",
       "the key (engine.ssh_identity or ssh_identity= of its entry, else ~/.ssh/id_* of the user "
       "sandshim runs as) must be in authorized_keys there and need no passphrase"},
      {{"UNPROTECTED PRIVATE KEY", "Load key", "no such identity"},
       "ssh cannot use the key",
       "the key file must belong to the user sandshim runs as, mode 0600, without a passphrase"},
      {{"Could not resolve", "Connection refused", "timed out", "No route to host",
        "Network is unreachable", "Connection closed by", "Connection reset"},
       "ssh cannot reach it",
       "check the host and port, and that sshd runs there"},
      {{"command not found", "docker: not found", "Cannot connect to the Docker daemon",
        "permission denied while trying to connect", "unknown command"},
       "docker does not answer there",
       "`docker system dial-stdio` must reach the engine as the login user on that machine"},
  }};
  return kinds;
}

}  // namespace

std::optional<fs::path> find_ssh_client() {
  for (const char* candidate : k_ssh_clients) {
    if (::access(candidate, X_OK) == 0) {
      return fs::path(candidate);
    }
  }
  return std::nullopt;
}

std::vector<std::string> ssh_argv(const fs::path& client, const SshEndpoint& endpoint,
                                  std::chrono::milliseconds timeout) {
  auto seconds = std::max<int64_t>(1, (timeout.count() + 999) / 1000);
  std::vector<std::string> argv = {
      client.string(), "-F", "none", "-T", "-o", "ConnectTimeout=" + std::to_string(seconds)};
  for (const char* option : k_fixed_options) {
    argv.insert(argv.end(), {"-o", option});
  }
  if (!endpoint.identity.empty()) {
    argv.insert(argv.end(), {"-o", "IdentitiesOnly=yes", "-i", endpoint.identity.string()});
  }
  if (!endpoint.known_hosts.empty()) {
    argv.insert(argv.end(), {"-o", "UserKnownHostsFile=" + endpoint.known_hosts.string(), "-o",
                             "GlobalKnownHostsFile=none"});
  }
  if (!endpoint.user.empty()) {
    argv.insert(argv.end(), {"-l", endpoint.user});
  }
  if (!endpoint.port.empty()) {
    argv.insert(argv.end(), {"-p", endpoint.port});
  }
  argv.insert(argv.end(), {"--", endpoint.host, "docker", "system", "dial-stdio"});
  return argv;
}

SshConnection connect_ssh(const SshEndpoint& endpoint, std::chrono::milliseconds timeout) {
  auto client = find_ssh_client();
  if (!client) {
    return {-1, -1, Fault::unreachable,
            "no ssh client in /usr/bin, /bin or /usr/local/bin (apt-get install openssh-client)"};
  }
  std::vector<std::string> argv = ssh_argv(*client, endpoint, timeout);
  std::vector<std::string> env(k_ssh_environment.begin(), k_ssh_environment.end());
  std::vector<char*> argv_pointers = c_strings(argv);
  std::vector<char*> env_pointers = c_strings(env);
  int pair[2];
  int diagnostics[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return failure("socketpair");
  }
  if (::pipe2(diagnostics, O_CLOEXEC) != 0) {
    SshConnection failed = failure("pipe");
    ::close(pair[0]);
    ::close(pair[1]);
    return failed;
  }
  pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) {
      run_watcher(argv_pointers.data(), env_pointers.data(), pair[1], diagnostics[1]);
    }
    ::_exit(0);
  }
  ::close(pair[1]);
  ::close(diagnostics[1]);
  if (child < 0) {
    SshConnection failed = failure("fork");
    ::close(pair[0]);
    ::close(diagnostics[0]);
    return failed;
  }
  wait_for(child);
  return {pair[0], diagnostics[0], Fault::none, ""};
}

std::string read_diagnostics(int diagnostics, std::chrono::milliseconds wait) {
  std::string text;
  const int64_t deadline = monotonic_ms() + wait.count();
  std::array<char, 4096> chunk{};
  while (text.size() < (64U << 10)) {
    pollfd watched{diagnostics, POLLIN, 0};
    int left = static_cast<int>(std::max<int64_t>(0, deadline - monotonic_ms()));
    if (::poll(&watched, 1, left) <= 0) {
      break;
    }
    ssize_t n = ::read(diagnostics, chunk.data(), chunk.size());
    if (n <= 0) {
      break;
    }
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  return text;
}

std::string ssh_failure(const SshEndpoint& endpoint, const std::string& ssh_stderr) {
  std::string where = describe(Transport(endpoint));
  for (const auto& kind : failure_kinds()) {
    for (auto pattern : kind.patterns) {
      if (std::string line = line_with(ssh_stderr, pattern); !line.empty()) {
        return where + ": " + kind.what + " (" + line + "): " + kind.fix;
      }
    }
  }
  std::string said = first_line_of(trim(ssh_stderr));
  return said.empty() ? "" : where + ": ssh failed (" + said + ")";
}

}  // namespace sandshim::engine::detail
