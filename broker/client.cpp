#include "broker/client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "broker/settings.hpp"
#include "broker/unix_socket.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

extern char** environ;

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

constexpr int k_forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr size_t k_max_config_bytes = 64 * 1024;

int say(const std::string& line) {
  std::cerr << "sandshim: " << line << std::endl;
  return exit_code::k_sandbox_error;
}

// The cwd opened by its path with this process's own credentials: the kernel checks that the
// caller may traverse every component, and the broker receives that directory, not a name.
UniqueFd open_cwd(std::string& path) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  path = cwd.string();
  UniqueFd fd(ec ? -1 : ::open(cwd.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    throw Fatal("cannot open the current directory (" + std::string(std::strerror(errno)) +
                "); cd into your project first; nothing ran");
  }
  return fd;
}

// Blocks the forwarded signals and reads them from a descriptor, so none is lost while the
// broker runs the command.
class ForwardedSignals {
 public:
  ForwardedSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : k_forwarded) {
      sigaddset(&set, sig);
    }
    ::sigprocmask(SIG_BLOCK, &set, &m_previous);
    m_fd = UniqueFd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ForwardedSignals(const ForwardedSignals&) = delete;
  ForwardedSignals& operator=(const ForwardedSignals&) = delete;
  ~ForwardedSignals() { ::sigprocmask(SIG_SETMASK, &m_previous, nullptr); }

  int fd() const { return m_fd.get(); }
  int next() {
    signalfd_siginfo info{};
    return ::read(m_fd.get(), &info, sizeof info) == sizeof info ? static_cast<int>(info.ssi_signo)
                                                                 : 0;
  }

 private:
  sigset_t m_previous{};
  UniqueFd m_fd;
};

// Ends this process the way the run ended: by its signal when it ended by one.
int finish_like(const Exit& exit) {
  if (exit.signal) {
    ::signal(*exit.signal, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, *exit.signal);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(*exit.signal);
  }
  return exit.code;
}

int broker_gone(const fs::path& socket, const std::string& why) {
  return say("the broker at " + socket.string() + " went away mid-run (" + why +
             "); its guardian removes the run's container; check `systemctl status sandshim` "
             "or the broker's log");
}

// Relays signals until the broker's Exit frame comes, or the connection ends without one.
int await_exit(int socket, const fs::path& path, ForwardedSignals& signals) {
  while (true) {
    pollfd fds[2] = {{socket, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return broker_gone(path, std::string("poll failed: ") + std::strerror(errno));
    }
    if ((fds[1].revents & POLLIN) != 0) {
      if (int sig = signals.next(); sig != 0) {
        send_frame(socket, encode(Signal{sig}));
      }
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ReadResult frame = read_frame(socket, 5000, 0);
      if (frame.status != ReadStatus::ok) {
        return broker_gone(path, "connection closed before the exit status");
      }
      auto decoded = decode_exit(frame.frame.payload);
      if (const auto* error = std::get_if<ProtocolError>(&decoded)) {
        return broker_gone(path, "bad answer: " + error->message);
      }
      spdlog::debug("broker: exit received at {:.3f}", precise_monotonic_ms());
      return finish_like(std::get<Exit>(decoded));
    }
  }
}

std::optional<TerminalSize> terminal_size() {
  winsize size{};
  if (::isatty(STDOUT_FILENO) != 1 || ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) {
    return std::nullopt;
  }
  return TerminalSize{size.ws_row, size.ws_col};
}

// The caller's own config files, as text: the broker's user cannot open them.
std::vector<std::pair<std::string, std::string>> user_config_texts() {
  std::vector<fs::path> files = {xdg_directory("config") / "sandshim" / "config"};
  if (auto named = environment::config_file()) {
    files.push_back(*named);
  }
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string text(k_max_config_bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.gcount() > 0) {
      text.resize(static_cast<size_t>(in.gcount()));
      texts.emplace_back(file.string(), std::move(text));
    }
  }
  return texts;
}

}  // namespace

Request request_for(Verb verb, std::string invoked_as, std::vector<std::string> argv) {
  Request request{verb, std::move(invoked_as), std::move(argv), {},
                  {},   user_config_texts(),   terminal_size()};
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (request.env.size() < k_max_list_entries) {
      request.env.emplace_back(*entry);
    }
  }
  return request;
}

std::optional<int> run_through_broker(Request request) {
  ClientSettings settings = client_settings();
  if (settings.mode == BrokerMode::off) {
    return std::nullopt;
  }
  auto socket = connect_unix(settings.socket);
  if (!socket) {
    if (settings.mode != BrokerMode::required) {
      return std::nullopt;
    }
    return say("no broker answers at " + settings.socket.string() + " (" + std::strerror(errno) +
               ") and " + settings.source +
               " requires one (broker.mode = required): start it with `systemctl start "
               "sandshim.socket` or `install/setup.sh`; nothing ran");
  }
  UniqueFd cwd = open_cwd(request.cwd);
  ForwardedSignals signals;
  if (!send_frame(socket->get(), encode(request),
                  {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, cwd.get()})) {
    return broker_gone(settings.socket, "it closed the connection before the request");
  }
  spdlog::debug("broker: request sent at {:.3f}", precise_monotonic_ms());
  cwd.reset();
  return await_exit(socket->get(), settings.socket, signals);
}

}  // namespace sandshim::broker
