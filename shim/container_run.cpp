#include "shim/container_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "shim/guardian.hpp"
#include "shim/image_probe.hpp"
#include "shim/output_pump.hpp"

namespace sandshim::shim {

namespace {

using audit::RunStatus;

constexpr int64_t k_guardian_grace_ms = 5000;
constexpr int64_t k_kill_retry_ms = 250;
constexpr int64_t k_signal_grace_ms = 3000;
constexpr int64_t k_engine_error_window_ms = 3000;

// Blocks the signals the run handles and reads them from a signalfd inside the poll loop;
// restores the caller's mask on destruction.
class SignalWatch {
 public:
  SignalWatch() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
      sigaddset(&set, sig);
    }
    ::sigprocmask(SIG_BLOCK, &set, &m_previous);
    m_fd = UniqueFd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!m_fd.valid()) {
      throw Fatal(std::string("signalfd failed: ") + std::strerror(errno));
    }
  }
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;
  ~SignalWatch() { ::sigprocmask(SIG_SETMASK, &m_previous, nullptr); }

  int fd() const { return m_fd.get(); }
  std::optional<int> next() {
    signalfd_siginfo info{};
    if (::read(m_fd.get(), &info, sizeof info) != static_cast<ssize_t>(sizeof info)) {
      return std::nullopt;
    }
    return static_cast<int>(info.ssi_signo);
  }

 private:
  UniqueFd m_fd;
  sigset_t m_previous{};
};

// The engine client's own error lines are held back briefly so that, when the engine fails, the
// user sees one clear line from sandshim instead of the engine's usage noise.
bool starts_like_engine_error(const std::string& text) {
  if (text.empty()) {
    return false;
  }
  static const char* const k_prefixes[] = {"docker: ", "Error: ", "Error response from daemon",
                                           "Cannot connect to", "permission denied while"};
  for (const char* prefix : k_prefixes) {
    size_t n = std::min(text.size(), std::strlen(prefix));
    if (text.compare(0, n, prefix, n) == 0) {
      return true;
    }
  }
  return false;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : std::to_string(sig);
}

// The state of one run while the engine client lives.
class RunLoop {
 public:
  RunLoop(const Engine& engine, const RunSpec& spec, const Policy& policy)
      : m_engine(engine),
        m_spec(spec),
        m_start_ms(monotonic_ms()),
        m_deadline_ms(m_start_ms + policy.timeout_ms),
        m_out(-1, STDOUT_FILENO, policy.audit_tail_bytes),
        m_err(-1, STDERR_FILENO, policy.audit_tail_bytes) {}

  ContainerResult run(const std::vector<std::string>& engine_args, const Policy& policy);

 private:
  pid_t spawn_client(const std::vector<std::string>& engine_args, Pipe& out, Pipe& err);
  void loop();
  int poll_timeout() const;
  void on_signal(int sig);
  void on_client_exit(int status);
  void enforce_deadlines();
  void update_engine_error_hold();
  ContainerResult classify(const Policy& policy);
  bool oom_killed() const;
  // The client failed before any container ran: 125, or 126 when the socket refused us.
  bool engine_failed(int code) const {
    const std::string& held = m_err.head();
    return starts_like_engine_error(held) &&
           (code == exit_code::k_sandbox_error ||
            (code == exit_code::k_cannot_execute &&
             held.find("permission denied while trying to connect") != std::string::npos));
  }
  std::string program_name() const {
    return std::filesystem::path(m_spec.command.front()).filename().string();
  }

  const Engine& m_engine;
  const RunSpec& m_spec;
  SignalWatch m_signals;
  int64_t m_start_ms;
  int64_t m_deadline_ms;
  StreamRelay m_out;
  StreamRelay m_err;
  pid_t m_client = -1;
  std::optional<ExitStatus> m_client_status;
  bool m_timed_out = false;
  std::optional<int> m_received_signal;
  int64_t m_next_kill_ms = 0;
  int64_t m_escalate_ms = 0;
  bool m_engine_error_window = true;
};

pid_t RunLoop::spawn_client(const std::vector<std::string>& engine_args, Pipe& out, Pipe& err) {
  std::vector<std::string> argv = {m_engine.client.string()};
  argv.insert(argv.end(), engine_args.begin(), engine_args.end());
  SpawnOptions options;
  options.argv = std::move(argv);
  options.env = m_engine.env_with(m_spec.env);
  options.die_with_parent = true;
  if (!m_spec.tty) {
    // Terminal signals reach only the shim, which forwards them to the container itself.
    options.new_process_group = true;
    options.stdout_fd = out.write.get();
    options.stderr_fd = err.write.get();
  }
  return spawn(options);
}

ContainerResult RunLoop::run(const std::vector<std::string>& engine_args, const Policy& policy) {
  Guardian guardian =
      Guardian::start(m_engine, m_spec.container_name(), m_deadline_ms + k_guardian_grace_ms);
  ImageProbe image_probe(m_engine, m_spec.image);
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  m_client = spawn_client(engine_args, out, err);
  out.write.reset();
  err.write.reset();
  if (m_spec.tty) {
    out.read.reset();
    err.read.reset();
    m_out = StreamRelay(-1, STDOUT_FILENO, 0);
    m_err = StreamRelay(-1, STDERR_FILENO, 0);
    m_out.read_some();
    m_err.read_some();
  } else {
    m_out = StreamRelay(out.read.get(), STDOUT_FILENO, policy.audit_tail_bytes);
    m_err = StreamRelay(err.read.get(), STDERR_FILENO, policy.audit_tail_bytes);
  }
  loop();
  if (m_client_status && !m_client_status->signal) {
    guardian.release();  // the client waited for the container's removal (--rm)
  } else {
    force_remove_container(m_engine, m_spec.container_name());
    guardian.release();
  }
  ContainerResult result = classify(policy);
  result.image_id = image_probe.result();
  return result;
}

int RunLoop::poll_timeout() const {
  int64_t now = monotonic_ms();
  int64_t next = m_timed_out ? m_next_kill_ms : m_deadline_ms;
  if (m_escalate_ms > 0) {
    next = std::min(next, m_escalate_ms);
  }
  if (m_engine_error_window) {
    next = std::min(next, m_start_ms + k_engine_error_window_ms);
  }
  return static_cast<int>(std::clamp<int64_t>(next - now, 0, 60'000));
}

void RunLoop::loop() {
  while (!m_client_status || !m_out.at_end() || !m_err.at_end()) {
    pollfd fds[5] = {{m_signals.fd(), POLLIN, 0},
                     {m_out.wants_input() ? m_out.from_fd() : -1, POLLIN, 0},
                     {m_err.wants_input() ? m_err.from_fd() : -1, POLLIN, 0},
                     {m_out.has_pending() ? m_out.to_fd() : -1, POLLOUT, 0},
                     {m_err.has_pending() ? m_err.to_fd() : -1, POLLOUT, 0}};
    int ready = ::poll(fds, 5, poll_timeout());
    if (ready < 0 && errno != EINTR) {
      throw Fatal(std::string("poll failed: ") + std::strerror(errno));
    }
    if ((fds[0].revents & POLLIN) != 0) {
      while (auto sig = m_signals.next()) {
        on_signal(*sig);
      }
    }
    if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      int64_t before = m_out.bytes();
      m_out.read_some();
      if (m_out.bytes() > before) {
        m_engine_error_window = false;  // the container is producing output: it started
      }
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      m_err.read_some();
    }
    update_engine_error_hold();
    if ((fds[3].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      m_out.write_some();
    }
    if ((fds[4].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      m_err.write_some();
    }
    enforce_deadlines();
  }
}

void RunLoop::update_engine_error_hold() {
  if (m_engine_error_window && monotonic_ms() >= m_start_ms + k_engine_error_window_ms) {
    m_engine_error_window = false;
  }
  bool small = m_err.pending().size() < StreamRelay::k_max_pending / 2;
  if (m_engine_error_window && small && starts_like_engine_error(m_err.pending())) {
    m_err.hold();
  } else if (!m_client_status) {
    m_err.release_hold();
  }
}

void RunLoop::on_signal(int sig) {
  if (sig == SIGCHLD) {
    int status = 0;
    if (m_client > 0 && ::waitpid(m_client, &status, WNOHANG) == m_client) {
      on_client_exit(status);
    }
    return;
  }
  if (m_client_status) {
    return;
  }
  bool repeated = m_received_signal.has_value();
  m_received_signal = sig;
  if (repeated) {
    force_remove_container(m_engine, m_spec.container_name());
    return;
  }
  signal_container(m_engine, m_spec.container_name(), signal_name(sig).substr(3));
  m_escalate_ms = monotonic_ms() + k_signal_grace_ms;
}

void RunLoop::on_client_exit(int status) {
  m_client_status = decode_wait_status(status);
  m_client = -1;
}

void RunLoop::enforce_deadlines() {
  if (m_client_status) {
    return;
  }
  int64_t now = monotonic_ms();
  if (!m_timed_out && now >= m_deadline_ms) {
    m_timed_out = true;
    m_next_kill_ms = now;
  }
  if (m_timed_out && now >= m_next_kill_ms) {
    // Retried: the container may not exist yet when the deadline passes.
    force_remove_container(m_engine, m_spec.container_name());
    m_next_kill_ms = monotonic_ms() + k_kill_retry_ms;
  }
  if (m_escalate_ms > 0 && now >= m_escalate_ms) {
    force_remove_container(m_engine, m_spec.container_name());
    m_escalate_ms = 0;
  }
}

bool RunLoop::oom_killed() const {
  int64_t since = (wall_clock_ms() - (monotonic_ms() - m_start_ms)) / 1000 - 1;
  int64_t until = wall_clock_ms() / 1000 + 1;
  auto result = run_captured(
      {m_engine.client.string(), "events", "--since=" + std::to_string(since),
       "--until=" + std::to_string(until), "--filter=container=" + m_spec.container_name(),
       "--filter=event=oom", "--format={{.Action}}"},
      m_engine.env, std::chrono::seconds(10));
  return result.out.find("oom") != std::string::npos;
}

ContainerResult RunLoop::classify(const Policy& policy) {
  ContainerResult result;
  int code = m_client_status ? m_client_status->code : exit_code::k_sandbox_error;
  const std::string limit = format_duration_ms(policy.timeout_ms);
  if (m_timed_out) {
    result.status = RunStatus::timeout;
    result.exit_code = exit_code::k_timeout;
    result.signal = SIGKILL;
    result.message = program_name() + " ran past its deadline of " + limit +
                     " (sandbox.timeout); the container was killed";
  } else if (m_received_signal) {
    result.status = RunStatus::killed;
    result.signal = *m_received_signal;
    result.exit_code = 128 + *m_received_signal;
    result.message =
        "stopped by " + signal_name(*m_received_signal) + "; the container was stopped";
  } else if (engine_failed(code)) {
    result.status = RunStatus::engine_error;
    result.exit_code = exit_code::k_sandbox_error;
    result.message = describe_engine_error(m_err.head(), m_spec);
    m_err.discard_pending();
  } else if (code == 128 + SIGKILL && oom_killed()) {
    result.status = RunStatus::oom;
    result.exit_code = code;
    result.signal = SIGKILL;
    result.message = program_name() + " was killed at the memory limit of " +
                     format_byte_size(policy.memory_bytes) + " (sandbox.memory)";
  } else {
    result.exit_code = code;
    result.status = code == 0 ? RunStatus::ok : RunStatus::error;
    if (code == 128 + SIGKILL) {
      result.status = RunStatus::killed;
      result.signal = SIGKILL;
    } else if (code > 128 && code < 128 + 32) {
      result.signal = code - 128;
    }
  }
  m_err.release_hold();
  m_out.flush();
  m_err.flush();
  result.stdout_bytes = m_out.bytes();
  result.stderr_bytes = m_err.bytes();
  result.stdout_tail = m_out.tail();
  result.stderr_tail = m_err.tail();
  return result;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  for (const char* prefix : {"docker: ", "Error: "}) {
    if (line.starts_with(prefix)) {
      line = line.substr(std::strlen(prefix));
    }
  }
  return trim(line);
}

}  // namespace

std::string describe_engine_error(const std::string& engine_output, const RunSpec& spec) {
  std::string reason = first_line(engine_output);
  std::string command = std::filesystem::path(spec.command.front()).filename().string();
  std::string fix = "check the engine with `docker info`";
  if (reason.find("No such image") != std::string::npos ||
      reason.find("image not known") != std::string::npos ||
      reason.find("unable to find image") != std::string::npos) {
    fix = "image " + spec.image +
          " is not present: build the defaults with `sandshim images build`, "
          "pull it, or set images." +
          command + " in the config";
  } else if (reason.find("Cannot connect") != std::string::npos ||
             reason.find("Is the docker daemon running") != std::string::npos ||
             reason.find("connection refused") != std::string::npos) {
    fix =
        "the engine is not running: start it (`sudo systemctl start docker`, or install/setup.sh)";
  } else if (reason.find("permission denied") != std::string::npos) {
    fix = "you may not use the engine socket: `sudo usermod -aG docker $USER`, then log in again";
  }
  return "the container engine failed (" + reason + "); " + fix + "; nothing ran";
}

ContainerResult run_container(const Engine& engine, const std::vector<std::string>& engine_args,
                              const RunSpec& spec, const Policy& policy) {
  RunLoop loop(engine, spec, policy);
  return loop.run(engine_args, policy);
}

}  // namespace sandshim::shim
