#include "engine/engine_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/io.hpp"

namespace sandshim::shim {

namespace {

// Output taken from the attach stream before it is written on: the rest waits in the socket,
// so a slow reader slows the container instead of growing the client.
constexpr size_t k_read_chunk = 64 << 10;
// How long the client waits for the container's exit once its output ended; the run loop's
// deadline and grace bound the run itself.
constexpr std::chrono::hours k_wait_for_exit{24};

// The run loop's end of the fault report (ApiRunIo::report), moved here by keep_only_stdio.
constexpr int k_report_fd = 3;

void report(const ApiFault& fault) {
  write_all(k_report_fd, encode_api_fault(fault));  // no reader: the run loop left, nobody to tell
}

// The fault of a request the engine did not take; `creating`: the create, whose 404 is the
// image (the name is sandshim's own, so no other object can be missing).
ApiFault refusal_fault(const engine::ApiClient& api, const engine::Reply& reply, bool creating) {
  if (reply.answered()) {
    return {
        creating && reply.status == 404 ? EngineErrorKind::image_missing : EngineErrorKind::other,
        false, engine::error_message(reply)};
  }
  return {reply.denied ? EngineErrorKind::permission : EngineErrorKind::unreachable, false,
          "cannot connect to the engine at " + engine::describe(api.transport()) + ": " +
              (reply.detail.empty() ? reply.describe() : reply.detail)};
}

// Reports the refusal; the client's exit code for it (126 when the socket refused us).
int refuse(const engine::ApiClient& api, const engine::Reply& reply, bool creating = false) {
  ApiFault fault = refusal_fault(api, reply, creating);
  report(fault);
  return fault.kind == EngineErrorKind::permission ? exit_code::k_cannot_execute
                                                   : exit_code::k_sandbox_error;
}

// The engine went away while the container ran (the run loop: engine lost, guardian).
int report_lost_wait(const engine::Reply& reply) {
  report(
      {EngineErrorKind::unreachable, true,
       "waiting for the container: " + (reply.detail.empty() ? reply.describe() : reply.detail)});
  return exit_code::k_sandbox_error;
}

// The three descriptors become 0, 1 and 2, and nothing else of the shim's stays open here (the
// guardian's pipe above all: its end must close with the shim).
void keep_only_stdio(const ApiRunIo& io) {
  int moved[4] = {::fcntl(io.in, F_DUPFD, 10), ::fcntl(io.out, F_DUPFD, 10),
                  ::fcntl(io.err, F_DUPFD, 10),
                  io.report < 0 ? -1 : ::fcntl(io.report, F_DUPFD, 10)};
  for (int target = 0; target < 4; ++target) {
    if (moved[target] >= 0) {
      ::dup2(moved[target], target);
    }
  }
  ::close_range(k_report_fd + (moved[k_report_fd] >= 0 ? 1 : 0), ~0U, 0);
}

// The caller's terminal in raw mode while the container owns it, as the client does.
class RawTerminal {
 public:
  explicit RawTerminal(bool tty) {
    if (tty && ::tcgetattr(0, &m_saved) == 0) {
      termios raw = m_saved;
      ::cfmakeraw(&raw);
      m_active = ::tcsetattr(0, TCSANOW, &raw) == 0;
    }
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  ~RawTerminal() {
    if (m_active) {
      ::tcsetattr(0, TCSANOW, &m_saved);
    }
  }

 private:
  termios m_saved{};
  bool m_active = false;
};

// The terminal's size as the container's TTY must have it, now and on each SIGWINCH.
class TerminalSize {
 public:
  TerminalSize(const engine::ApiClient& api, const std::string& name, bool tty)
      : m_api(api), m_name(name) {
    if (!tty) {
      return;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGWINCH);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    m_fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    send();
  }
  TerminalSize(const TerminalSize&) = delete;
  TerminalSize& operator=(const TerminalSize&) = delete;
  ~TerminalSize() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  int fd() const { return m_fd; }
  void on_change() {
    signalfd_siginfo info{};
    while (::read(m_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    }
    send();
  }

 private:
  void send() const {
    winsize size{};
    if (::ioctl(1, TIOCGWINSZ, &size) == 0 && size.ws_row > 0) {
      m_api.resize(m_name, size.ws_row, size.ws_col);
    }
  }
  const engine::ApiClient& m_api;
  const std::string& m_name;
  int m_fd = -1;
};

// The container's stdio while it runs: the caller's stdin into the stream, its frames out onto
// fds 1 and 2 (raw onto 1 with a TTY), until the engine closes the stream.
class StdioPump {
 public:
  StdioPump(engine::AttachStream& attach, bool interactive, TerminalSize& size)
      : m_attach(attach), m_stdin_open(interactive), m_size(size) {
    if (!interactive) {
      m_attach.close_stdin();
    }
  }
  void run() {
    while (!m_attach.ended() && !m_attach.malformed()) {
      pollfd fds[3] = {
          {m_stdin_open && m_pending.empty() ? 0 : -1, POLLIN, 0},
          {m_attach.fd(), static_cast<short>(POLLIN | (m_pending.empty() ? 0 : POLLOUT)), 0},
          {m_size.fd(), POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0 && errno != EINTR) {
        return;
      }
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        read_stdin();
      }
      if ((fds[1].revents & POLLOUT) != 0) {
        forward_stdin();
      }
      if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !write_output()) {
        return;
      }
      if ((fds[2].revents & POLLIN) != 0) {
        m_size.on_change();
      }
    }
  }

 private:
  void read_stdin() {
    char buffer[k_read_chunk];
    ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n > 0) {
      m_pending.assign(buffer, static_cast<size_t>(n));
      forward_stdin();
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      end_stdin();
    }
  }
  void forward_stdin() {
    size_t n = m_attach.write_some(m_pending);
    if (m_attach.stdin_broken()) {
      m_pending.clear();  // the container closed its stdin: what is left has no reader
      m_stdin_open = false;
      return;
    }
    m_pending.erase(0, n);
    if (m_pending.empty() && !m_stdin_open) {
      m_attach.close_stdin();  // the caller's EOF, once what came before it went in
    }
  }
  void end_stdin() {
    m_stdin_open = false;
    if (m_pending.empty()) {
      m_attach.close_stdin();
    }
  }
  bool write_output() {
    for (const auto& chunk : m_attach.read_available(k_read_chunk)) {
      int fd = chunk.channel == engine::Channel::stderr_channel ? 2 : 1;
      if (!write_all_waiting(fd, chunk.data)) {
        return false;  // the caller stopped reading: as the client, stop relaying
      }
    }
    return true;
  }

  engine::AttachStream& m_attach;
  bool m_stdin_open;
  std::string m_pending;  // stdin read but not yet taken by the stream (one read at most)
  TerminalSize& m_size;
};

// Writes the id the engine gave the container where the run loop looks for it (--cidfile).
void write_cidfile(const std::string& path, const engine::Reply& created) {
  auto reply = nlohmann::json::parse(created.body, nullptr, false);
  if (path.empty() || !reply.is_object() || !reply.contains("Id") || !reply["Id"].is_string()) {
    return;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    write_all(fd, reply["Id"].get<std::string>());
    ::close(fd);
  }
}

// The wait for the container's exit. docker's goes before start (`next-exit`): nothing can end
// unseen. podman's `next-exit` subscribes to its events only when the service handles the wait,
// so an exit before that is never reported (the wait hangs; seen under load), and its created
// container counts as not running: podman's wait goes after start, for `not-running`, which also
// answers for a container that already exited (it has no AutoRemove to remove it first).
engine::PendingReply send_exit_wait(const engine::ApiClient& api, const CreateRequest& request) {
  return api.send_wait(request.name, request.libpod ? "not-running" : "next-exit");
}

int unsent_wait(const engine::ApiClient& api, engine::PendingReply& exited) {
  refuse(api, exited.get(std::chrono::milliseconds(0)));
  return exit_code::k_sandbox_error;
}

std::optional<int> start_container(const engine::ApiClient& api, const CreateRequest& request) {
  engine::Reply started = api.start(request.name);
  if (started.ok()) {
    return std::nullopt;
  }
  int code = refuse(api, started);
  return started.answered() ? start_failure_code(engine::error_message(started)) : code;
}

// The start, with the wait sent before it (docker) or after it (podman); the failure's exit code.
std::optional<int> start_and_wait(const engine::ApiClient& api, const CreateRequest& request,
                                  engine::PendingReply& exited) {
  if (!request.libpod && !(exited = send_exit_wait(api, request)).sent()) {
    return unsent_wait(api, exited);
  }
  if (auto failed = start_container(api, request)) {
    return failed;
  }
  if (request.libpod && !(exited = send_exit_wait(api, request)).sent()) {
    return unsent_wait(api, exited);
  }
  return std::nullopt;
}

// The run after create: attach, wait, start, stdio; the exit code.
int attach_and_run(const engine::ApiClient& api, const CreateRequest& request) {
  engine::AttachStream attach = api.attach(request.name, request.tty);
  if (!attach.attached()) {
    return refuse(api, attach.reply());
  }
  engine::PendingReply exited;
  if (auto failed = start_and_wait(api, request, exited)) {
    return *failed;
  }
  {
    RawTerminal raw(request.tty);
    TerminalSize size(api, request.name, request.tty);
    StdioPump(attach, request.interactive, size).run();
  }
  engine::Reply status = exited.get(k_wait_for_exit);
  if (auto code = engine::wait_status(status)) {
    return *code;
  }
  return report_lost_wait(status);
}

// The create body with the terminal's size, so the TTY has it from the first instant (a resize
// after start races the program's first look at it).
std::string body_with_console_size(const CreateRequest& request) {
  winsize size{};
  if (!request.tty || request.libpod || ::ioctl(1, TIOCGWINSZ, &size) != 0 || size.ws_row == 0) {
    return request.body;
  }
  auto body = nlohmann::json::parse(request.body, nullptr, false);
  if (!body.is_object()) {
    return request.body;
  }
  body["HostConfig"]["ConsoleSize"] = {size.ws_row, size.ws_col};
  return body.dump();
}

int run_over_api(const engine::ApiClient& api, const CreateRequest& request,
                 const std::string& cidfile) {
  engine::Reply created = request.libpod
                              ? api.create_libpod(request.body)
                              : api.create(request.name, body_with_console_size(request));
  if (!created.ok()) {
    return refuse(api, created, true);
  }
  write_cidfile(cidfile, created);
  int code = attach_and_run(api, request);
  if (request.shipped) {
    fetch_writable_back(api, request.name, *request.shipped);
  }
  if (!request.auto_remove || code == exit_code::k_sandbox_error ||
      code == exit_code::k_cannot_execute || code == exit_code::k_not_found) {
    api.remove(request.name);  // never started, or not the engine's to remove
  }
  if (request.shipped) {
    remove_writable_volumes(api, *request.shipped);
  }
  return code;
}

}  // namespace

int start_failure_code(const std::string& engine_message) {
  for (const char* missing : {"executable file not found", "no such file or directory"}) {
    if (engine_message.find(missing) != std::string::npos) {
      return exit_code::k_not_found;
    }
  }
  for (const char* denied : {"permission denied", "is a directory"}) {
    if (engine_message.find(denied) != std::string::npos) {
      return exit_code::k_cannot_execute;
    }
  }
  return exit_code::k_sandbox_error;
}

pid_t start_api_client(const engine::ApiClient& api, const CreateRequest& request,
                       const ApiRunIo& io) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Fatal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(exit_code::k_sandbox_error);
    }
    if (!request.tty) {
      ::setpgid(0, 0);  // terminal signals reach only the shim, which forwards them
    }
    keep_only_stdio(io);
    ::_exit(run_over_api(api, request, io.cidfile));
  }
  return pid;
}

}  // namespace sandshim::shim
