#include "engine/tls_connect.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "common/io.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/unique_fd.hpp"
#include "engine/tls_relay/protocol.hpp"

namespace sandshim::engine::detail {

namespace {

namespace protocol = tls_relay;
using Clock = std::chrono::steady_clock;

// The status line is one word and a detail; anything longer is not the relay's.
constexpr size_t k_max_status_bytes = 4096;
// The relay keeps the deadline itself; this much more covers its exec and its report.
constexpr auto k_report_grace = std::chrono::seconds(2);

TlsConnection failure(Fault fault, std::string detail) {
  return {-1, fault, std::move(detail)};
}

// The relay's argv, built before the fork (the child only calls exec).
struct RelayCommand {
  std::vector<std::string> words;
  std::vector<char*> argv;
};

RelayCommand relay_command(const std::filesystem::path& program, const TlsEndpoint& endpoint,
                           Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  RelayCommand command;
  command.words = {program.string(), endpoint.host, endpoint.port, endpoint.cert_dir.string(),
                   std::to_string(std::max<long long>(ms.count(), 0))};
  for (std::string& word : command.words) {
    command.argv.push_back(word.data());
  }
  command.argv.push_back(nullptr);
  return command;
}

// In the relay's process, before exec: its own session, every signal blocked (the caller's
// terminal must not end it mid-answer), /dev/null for stdio, the local end on fd 3 and the
// status on fd 4, nothing else open. Async-signal-safe calls only.
[[noreturn]] void exec_relay(const RelayCommand& command, int local, int status) {
  ::setsid();
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  int high_local = ::fcntl(local, F_DUPFD, 10);
  int high_status = ::fcntl(status, F_DUPFD, 10);
  int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) {
    ::dup2(null, fd);
  }
  ::dup2(high_local, protocol::k_local_fd);
  ::dup2(high_status, protocol::k_status_fd);
  ::syscall(SYS_close_range, protocol::k_status_fd + 1, ~0U, 0U);
  ::execv(command.argv[0], command.argv.data());
  static constexpr char k_prefix[] = "unreachable cannot run sandshim-tls: ";
  const char* why = std::strerror(errno);
  (void)!::write(protocol::k_status_fd, k_prefix, sizeof k_prefix - 1);
  (void)!::write(protocol::k_status_fd, why, std::strlen(why));
  ::_exit(127);
}

// Starts the relay, forked twice so nobody waits for it and it leaves no zombie.
std::optional<std::string> start_relay(const RelayCommand& command, int local, int status) {
  pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) {
      exec_relay(command, local, status);
    }
    ::_exit(0);
  }
  if (child < 0) {
    return std::string("fork: ") + std::strerror(errno);
  }
  wait_for(child);
  return std::nullopt;
}

// The relay's status line, read until it closes fd 4 or the deadline (and a grace) passes.
std::optional<std::string> read_status(int fd, Clock::time_point deadline) {
  std::string text;
  char buffer[512];
  while (text.size() < k_max_status_bytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd poll_fd{fd, POLLIN, 0};
    int ready = ::poll(&poll_fd, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      return std::nullopt;
    }
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
      return text;
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

// The connection the status line describes: the local end on "ok", else the relay's fault.
TlsConnection from_status(const std::optional<std::string>& status, UniqueFd local) {
  if (!status) {
    return failure(Fault::timeout, "sandshim-tls did not report within the deadline");
  }
  std::string line = status->substr(0, status->find('\n'));
  std::string word = line.substr(0, line.find(' '));
  std::string detail = word.size() < line.size() ? line.substr(word.size() + 1) : "";
  if (word == protocol::k_ok) {
    return {local.release(), Fault::none, ""};
  }
  if (word == protocol::k_timeout) {
    return failure(Fault::timeout, detail);
  }
  return failure(Fault::unreachable, line.empty() ? "sandshim-tls ended without a word"
                                                  : (detail.empty() ? line : detail));
}

}  // namespace

TlsConnection connect_tls(const TlsEndpoint& endpoint, Clock::time_point deadline) {
  std::optional<std::filesystem::path> program = find_companion(protocol::k_program, "sandshim");
  if (!program) {
    return failure(Fault::unreachable,
                   "cannot find sandshim-tls, which holds TLS connections to "
                   "remote engines: looked for " +
                       companion_places(protocol::k_program, "sandshim") + "; reinstall sandshim");
  }
  RelayCommand command = relay_command(*program, endpoint, deadline);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return failure(Fault::unreachable, std::string("socketpair: ") + std::strerror(errno));
  }
  UniqueFd local(pair[0]);
  UniqueFd remote_end(pair[1]);
  Pipe status = make_pipe();
  if (std::optional<std::string> failed =
          start_relay(command, remote_end.get(), status.write.get())) {
    return failure(Fault::unreachable, *failed);
  }
  remote_end.reset();
  status.write.reset();
  return from_status(read_status(status.read.get(), deadline + k_report_grace), std::move(local));
}

}  // namespace sandshim::engine::detail
