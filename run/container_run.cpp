#include "run/container_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string_view>

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/cgroup.hpp"
#include "common/error.hpp"
#include "common/io.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "engine/client_output.hpp"
#include "engine/engine_api.hpp"
#include "engine/engine_client.hpp"
#include "engine/engine_create.hpp"
#include "engine/engine_run.hpp"
#include "engine/image_probe.hpp"
#include "engine/oom_watch.hpp"
#include "run/broker_launch.hpp"
#include "run/guardian.hpp"
#include "run/launcher_client.hpp"
#include "run/one_stream.hpp"
#include "run/output_pump.hpp"
#include "run/pids_events.hpp"
#include "run/step_timer.hpp"

namespace sandshim::shim {

namespace {

// CLOCK_MONOTONIC (steady_clock) in fractional ms: the broker's debug lines use the same clock,
// so bench/broker_overhead.sh can subtract them.
double steady_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using audit::RunStatus;

constexpr int64_t k_guardian_grace_ms = 5000;
constexpr int64_t k_kill_retry_ms = 250;
constexpr int64_t k_signal_grace_ms = 3000;
constexpr int64_t k_engine_error_window_ms = 3000;
// The API client's own bound on a call outlasts the loop's stop of it by this much, so the loop
// (woken late on a loaded machine) always stops it first and its timeout line never shows.
constexpr int64_t k_client_bound_margin_ms = 2000;
constexpr int64_t k_probe_wait_ms = 2000;
// How long an exit of 137 that sandshim did not cause waits for the engine's `oom` event, past
// the report of the container's end too: containerd publishes the OOM and the exit on separate
// paths, and on a loaded engine the OOM comes seconds after the exit (the 1,000-run soak at load
// 50 recorded 11 of 101 as `killed` with a 1 s wait). An exec in a warm container has no end of
// its own and waits the whole time: a 1 s wait recorded a warm OOM as `killed` in CI at -j3.
constexpr std::chrono::milliseconds k_oom_wait{5000};
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

// An engine command (`rm --force`, `kill --signal`) started from the poll loop without waiting
// for it, so an engine that stopped answering never freezes the loop that enforces the deadline.
// One at a time: a retry is skipped while the previous attempt still runs.
class BackgroundAction {
 public:
  explicit BackgroundAction(const Engine& engine) : m_engine(engine) {}
  BackgroundAction(const BackgroundAction&) = delete;
  BackgroundAction& operator=(const BackgroundAction&) = delete;
  ~BackgroundAction() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      wait_for(m_pid);
    }
  }

  void start(const std::vector<std::string>& args) {
    reap();
    if (m_pid > 0) {
      return;
    }
    UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
    SpawnOptions options;
    options.argv = {m_engine.client.string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = m_engine.env;
    options.stdin_fd = options.stdout_fd = options.stderr_fd = null_fd.get();
    options.new_process_group = true;
    options.die_with_parent = true;
    options.cwd = engine_client_directory().string();
    m_pid = spawn(options);
  }

  // The same for an Engine API call, made by a forked process so a paused engine costs the loop
  // nothing; `call` returns whether the engine did it.
  void start_call(const std::function<bool()>& call) {
    reap();
    if (m_pid > 0) {
      return;
    }
    m_pid = ::fork();
    if (m_pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::_exit(call() ? 0 : 1);
    }
  }

  // Collects the attempt if it ended (called on SIGCHLD).
  void reap() {
    int status = 0;
    if (m_pid > 0 && ::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_pid = -1;
    }
  }

 private:
  const Engine& m_engine;
  pid_t m_pid = -1;
};

// The state of one run while the engine client lives.
class RunLoop {
 public:
  RunLoop(const Engine& engine, const RunSpec& spec, const Policy& policy)
      : m_engine(engine),
        m_spec(spec),
        m_start_ms(monotonic_ms()),
        m_deadline_ms(m_start_ms + policy.timeout_ms),
        m_out(-1, spec.stdio.out, policy.audit_tail_bytes),
        m_err(-1, spec.stdio.err, policy.audit_tail_bytes) {}

  ContainerResult run(const EngineCall& call, const Policy& policy);
  Guardian start_guardian(const Policy& policy, ApiPath& api_path) const;
  void start_watches(std::optional<ImageProbe>& image_probe);
  void start_client(const std::vector<std::string>& engine_args, Pipe& out, Pipe& err,
                    const Policy& policy);
  ContainerResult classify_with_transfer(const Policy& policy);
  void hand_over_to_guardian(Guardian& guardian);

 private:
  std::optional<ContainerResult> connect_to_launcher();
  pid_t spawn_client(const std::vector<std::string>& engine_args, Pipe& out, Pipe& err);
  void ship_workspace(const Policy& policy);
  void leave_to_client(const engine::Transport& transport, const std::string& unsupported);
  ContainerResult not_started(const std::string& why) const;
  std::string shipped_note(std::string& failure);
  void choose_api_path(const EngineCall& call, const Policy& policy, const ApiPath& path);
  pid_t spawn_api_client(Pipe& out, Pipe& err);
  std::optional<ApiFault> take_api_fault();
  void remove_container();
  void signal_container(int sig);
  void loop();
  void serve_ready(const pollfd* fds);
  int poll_timeout() const;
  void on_signal(int sig);
  void on_client_exit(int status);
  void enforce_deadlines();
  void request_removal(int64_t now);
  void stop_waiting_for_client();
  bool container_settled() const;
  void update_engine_error_hold();
  RunFacts facts();  // reads what the watched events say, so not const
  ContainerResult classify(const Policy& policy);
  bool oom_killed();
  bool oom_from_event_log() const;
  LimitFacts limit_facts(const ContainerResult& result) const;
  std::string program_stderr_last(const ContainerResult& result) const;
  const Engine& m_engine;
  const RunSpec& m_spec;
  SignalWatch m_signals;
  int64_t m_start_ms;
  int64_t m_deadline_ms;
  StreamRelay m_out;
  StreamRelay m_err;
  pid_t m_client = -1;
  UniqueFd m_launcher;  // the claimed container's launcher, which the client hands the command
  std::optional<ExitStatus> m_client_status;
  bool m_timed_out = false;
  std::optional<int> m_received_signal;
  int64_t m_removal_since_ms = 0;  // when the shim first decided to remove the container
  int64_t m_next_kill_ms = 0;
  int64_t m_escalate_ms = 0;
  bool m_engine_error_window = true;
  bool m_client_abandoned = false;  // the engine did not answer: the guardian took over
  bool m_engine_lost = false;       // the client lost the engine after the container started
  OomWatch m_oom;
  UniqueFd m_oom_counter;  // a warm container's memory cgroup's OOM kill count, where readable
  std::optional<uint64_t> m_oom_kills_before;
  BackgroundAction m_remover{m_engine};
  BackgroundAction m_signaller{m_engine};
  PidsEvents m_pids;
  // docker's cold run over the Engine API (engine.api = on): the client of its socket, and the
  // container the run's spec describes. Unset: the engine's client runs.
  std::optional<engine::ApiClient> m_api;
  std::optional<CreateRequest> m_create;
  std::string m_shipped_note;  // a remote engine: which snapshot the run used
  UniqueFd m_api_report;       // the API client's fault report (ApiRunIo::report)
};

// The API path where it can stand in for the client with the same container: engine.api = on, a
// local socket that answers (docker's, or podman's service), a cold run, and every field of its
// spec with an API form (podman's through libpod's create). Else the client.
void RunLoop::choose_api_path(const EngineCall& call, const Policy& policy, const ApiPath& path) {
  if (m_spec.warm || m_launcher.valid() || !call.create) {
    return;
  }
  if (!path.transport) {
    spdlog::debug("engine {} run: over {}", m_engine.kind, path.reason);
    return;
  }
  // A loaded engine may take long to create and start a container: the run's deadline, not a
  // call's, bounds the API client (the loop removes the container and then stops the client).
  m_api.emplace(*path.transport, std::chrono::milliseconds(policy.timeout_ms + k_client_grace_ms +
                                                           k_client_bound_margin_ms));
  ApiCreate create = api_create(*call.create, m_engine.dialect.is_podman(),
                                CreateInputs{m_engine.env_with(m_spec.env)});
  if (!create.request) {
    leave_to_client(*path.transport, create.unsupported);
    return;
  }
  m_create = std::move(create.request);
  if (engine::is_remote(*path.transport)) {
    ship_workspace(policy);
  }
  spdlog::debug("engine {} run: over the API socket {} ({})", m_engine.kind,
                engine::describe(m_api->transport()),
                m_create->libpod ? "libpod create" : "create");
}

// A remote engine: the snapshot on the engine (sent once per tree), the create body with its
// volumes in place of this machine's paths, and a file for what comes back.
// An argument without an API form: the engine's client runs it, which a remote engine cannot.
void RunLoop::leave_to_client(const engine::Transport& transport, const std::string& unsupported) {
  if (engine::is_remote(transport)) {
    throw Fatal("engine.endpoint is remote and " + quoted(unsupported) +
                " has no API form: only the Engine API ships the workspace");
  }
  spdlog::debug("engine {} run: the client runs it: {} has no API form", m_engine.kind,
                quoted(unsupported));
  m_api.reset();
}

void RunLoop::ship_workspace(const Policy& policy) {
  StepTimer step("workspace snapshot");
  std::vector<std::filesystem::path> hidden;
  for (const auto& masked : m_spec.masks.paths) {
    hidden.push_back(masked.path);
  }
  engine::ApiClient api(m_api->transport(), std::chrono::milliseconds(policy.timeout_ms));
  ShippedWorkspace shipped =
      ship_snapshot(api, m_spec.workspace, hidden, m_spec.image, m_spec.user);
  for (const auto& path : policy.writable) {
    shipped.writable.push_back((m_spec.workspace / path).lexically_normal());
  }
  ship_writable(api, shipped, m_spec.container_name(), m_spec.image, hidden);
  m_create->body = remote_create_body(m_create->body, shipped);
  char report[] = "/tmp/sandshim-returned-XXXXXX";  // the API client's line for the audit
  UniqueFd report_fd(shipped.writable.empty() ? -1 : ::mkostemp(report, O_CLOEXEC));
  if (report_fd.valid()) {
    shipped.report_file = report;
  }
  if (!shipped.writable.empty()) {
    m_create->auto_remove = false;  // the container outlives its exit until they came back
  }
  m_shipped_note = "workspace snapshot " + shipped.volume + " (" +
                   (shipped.reused ? "on the engine already" : "sent") + ": " +
                   std::to_string(shipped.files) + " files, " + std::to_string(shipped.bytes) +
                   " bytes)";
  spdlog::debug("engine {} run: {}", m_engine.kind, m_shipped_note);
  m_create->shipped = std::move(shipped);
  step.done();
}

// What the run sent and what came back, for the audit row's message; a failed return also in
// `failure`.
std::string RunLoop::shipped_note(std::string& failure) {
  if (!m_create || !m_create->shipped) {
    return "";
  }
  if (m_create->shipped->writable.empty()) {
    return m_shipped_note + "; nothing comes back (no sandbox.writable)";
  }
  std::optional<WritableReturn> back;
  if (const auto& file = m_create->shipped->report_file; !file.empty()) {
    back = take_return_report(file);
  }
  if (!back) {
    return m_shipped_note + "; nothing came back";
  }
  failure = back->failure;
  return m_shipped_note + "; " + back->summary();
}

pid_t RunLoop::spawn_api_client(Pipe& out, Pipe& err) {
  ApiRunIo io;
  io.in = m_spec.stdio.in;
  io.out = m_spec.tty ? m_spec.stdio.out : out.write.get();
  io.err = m_spec.tty ? m_spec.stdio.err : err.write.get();
  io.cidfile = m_pids.attach_api_client();
  Pipe report = make_pipe();
  io.report = report.write.get();
  pid_t pid = start_api_client(*m_api, *m_create, io);
  m_api_report = std::move(report.read);  // the write end closes here: only the client holds it
  return pid;
}

// The API client's typed fault, once it exited (whole: it fits the pipe, written before the exit).
std::optional<ApiFault> RunLoop::take_api_fault() {
  if (!m_api_report.valid()) {
    return std::nullopt;
  }
  ::fcntl(m_api_report.get(), F_SETFL, O_NONBLOCK);  // a TLS relay it forked may hold the pipe
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while (text.size() < k_api_fault_report_bytes &&
         (n = retry_on_eintr([&] { return ::read(m_api_report.get(), buffer, sizeof buffer); })) >
             0) {
    text.append(buffer, static_cast<size_t>(n));
  }
  m_api_report.reset();
  return decode_api_fault(text);
}

// From outside the container, never from its client: through the API when the run uses it.
void RunLoop::remove_container() {
  if (m_api) {
    engine::ApiClient api(m_api->transport());  // each attempt bounded: the next one retries
    std::string name = m_spec.container_name();
    m_remover.start_call([api, name] { return removal_confirmed(api.remove(name)); });
  } else {
    m_remover.start(m_engine.dialect.remove_arguments(m_spec.container_name()));
  }
}

void RunLoop::signal_container(int sig) {
  std::string name = signal_name(sig).substr(3);
  if (m_api) {
    engine::ApiClient api(m_api->transport());
    std::string container = m_spec.container_name();
    m_signaller.start_call([api, container, name] { return api.kill(container, name).ok(); });
  } else {
    m_signaller.start(signal_arguments(m_spec, name));
  }
}

pid_t RunLoop::spawn_client(const std::vector<std::string>& engine_args, Pipe& out, Pipe& err) {
  if (m_launcher.valid()) {
    return start_launch_client(
        std::move(m_launcher), m_spec, launch_environment(engine_args, m_spec), m_spec.stdio.in,
        out.write.get(), launcher_stderr(m_spec.one_stream, out.write.get(), err.write.get()));
  }
  if (m_create) {
    return spawn_api_client(out, err);
  }
  std::vector<std::string> argv = {m_engine.client.string()};
  argv.insert(argv.end(), engine_args.begin(), engine_args.end());
  m_pids.attach(argv);
  SpawnOptions options;
  options.argv = std::move(argv);
  options.env = m_engine.env_with(m_spec.env);
  options.die_with_parent = true;
  options.cwd = engine_client_directory().string();
  options.stdin_fd = m_spec.stdio.in;
  options.stdout_fd = m_spec.stdio.out;
  options.stderr_fd = m_spec.stdio.err;
  if (!m_spec.tty) {
    // Terminal signals reach only the shim, which forwards them to the container itself.
    options.new_process_group = true;
    options.stdout_fd = out.write.get();
    options.stderr_fd = err.write.get();
  }
  return spawn(options);
}

// A run that failed before its container started: nothing ran.
ContainerResult RunLoop::not_started(const std::string& why) const {
  ContainerResult result;
  result.status = RunStatus::engine_error;
  result.exit_code = exit_code::k_sandbox_error;
  result.message = why + "; nothing ran";
  result.image_id = m_spec.image_id;
  return result;
}

// The launcher of a claimed warm container is asked once, before anything runs: missing, wrong
// or late, the run goes cold (its outcome says why) and nothing ran in the container.
std::optional<ContainerResult> RunLoop::connect_to_launcher() {
  if (m_spec.launcher_pid <= 0) {
    return std::nullopt;
  }
  LauncherLink link = connect_claimed_launcher(m_spec);
  if (link.socket.valid()) {
    m_launcher = std::move(link.socket);
    // Opened while the container's init lives: once it exits, its cgroup is the root's.
    m_oom_counter = open_oom_kill_counter(m_spec.launcher_pid);
    m_oom_kills_before = read_oom_kill_count(m_oom_counter.get());
    return std::nullopt;
  }
  ContainerResult result;
  result.status = RunStatus::engine_error;
  result.exit_code = exit_code::k_sandbox_error;
  result.message = "the launcher of the warm container " + m_spec.container_name() + " " +
                   link.failure + "; nothing ran in it";
  result.image_id = m_spec.image_id;
  return result;
}

// The image's id (when the spec has none yet) and the container's OOM events, asked for before
// the container exists.
void RunLoop::start_watches(std::optional<ImageProbe>& image_probe) {
  if (m_spec.image_id.empty()) {
    StepTimer step("engine image inspect (sent)");
    image_probe.emplace(m_engine, m_spec.image);
  }
  StepTimer oom_step("engine events subscribe");
  m_oom = OomWatch(m_engine, m_spec.container_name());  // before the container exists
  oom_step.done();
}

// Spawns the client and relays its output to the caller's; with a tty it writes there itself.
void RunLoop::start_client(const std::vector<std::string>& engine_args, Pipe& out, Pipe& err,
                           const Policy& policy) {
  StepTimer client_step("client spawn");
  m_client = spawn_client(engine_args, out, err);
  client_step.done();
  spdlog::debug("engine {} run: client started at {:.3f}", m_engine.kind, steady_ms());
  out.write.reset();
  err.write.reset();
  if (m_spec.tty) {
    out.read.reset();
    err.read.reset();
    m_out = StreamRelay(-1, m_spec.stdio.out, 0);
    m_err = StreamRelay(-1, m_spec.stdio.err, 0);
    m_out.read_some();
    m_err.read_some();
  } else {
    m_out = StreamRelay(out.read.get(), m_spec.stdio.out, policy.audit_tail_bytes);
    m_err = StreamRelay(err.read.get(), m_spec.stdio.err, policy.audit_tail_bytes);
  }
}

// How the run ended, with what a remote engine's snapshot sent and brought back.
ContainerResult RunLoop::classify_with_transfer(const Policy& policy) {
  StepTimer classify_step("classify");
  ContainerResult result = classify(policy);
  std::string failure;
  result.transfer = shipped_note(failure);
  if (!failure.empty()) {
    result.message = result.message.empty() ? failure : result.message + "; " + failure;
  }
  classify_step.done();
  return result;
}

void RunLoop::hand_over_to_guardian(Guardian& guardian) {
  if (m_spec.warm || (m_create && container_settled())) {
    // A warm container outlives its exec, and a cold one over the API returned at its exit,
    // before the engine's AutoRemove: the guardian confirms the removal once we exit.
    guardian.remove_after_exit();
  } else if (container_settled()) {
    guardian.release();
  }  // else the guardian, never released, keeps removing the container until the engine answers
}

// The guardian that removes the container should this process die, started first, over the
// path (`api_path`) the engine is reached by.
Guardian RunLoop::start_guardian(const Policy& policy, ApiPath& api_path) const {
  StepTimer guardian_step("guardian start");
  api_path = engine_api_path(m_engine, policy);
  Guardian guardian = Guardian::start(m_engine, m_spec.container_name(),
                                      m_deadline_ms + k_guardian_grace_ms, api_path.transport);
  guardian_step.done();
  return guardian;
}

ContainerResult RunLoop::run(const EngineCall& call, const Policy& policy) {
  ApiPath api_path;
  Guardian guardian = start_guardian(policy, api_path);
  StepTimer launcher_step("launcher connect");
  if (auto failed = connect_to_launcher()) {
    guardian.remove_now();
    return *failed;
  }
  launcher_step.done();
  std::optional<ImageProbe> image_probe;
  start_watches(image_probe);
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  try {
    choose_api_path(call, policy, api_path);
  } catch (const Fatal& e) {  // a remote engine that cannot take this run, or its snapshot
    // Nothing was created under the container's name yet: nothing for the guardian to retry
    // (for ten minutes, against an engine that just refused us).
    guardian.release();
    return not_started(e.what());
  }
  start_client(call.args, out, err, policy);
  StepTimer loop_step("client run");
  loop();
  loop_step.done();
  ContainerResult result = classify_with_transfer(policy);
  hand_over_to_guardian(guardian);
  // An engine that did not answer the run will not answer the probe either.
  result.image_id =
      image_probe ? image_probe->result(m_client_abandoned ? 0 : k_probe_wait_ms) : m_spec.image_id;
  return result;
}

// The client waited for the container's removal (--rm) and told us how it ended.
bool RunLoop::container_settled() const {
  return m_client_status && !m_client_status->signal && !m_client_abandoned && !m_engine_lost;
}

int RunLoop::poll_timeout() const {
  int64_t now = monotonic_ms();
  int64_t next = now + 60'000;  // once the client is gone only the output is left to drain
  if (!m_client_status) {
    next = m_deadline_ms;
    if (m_removal_since_ms > 0) {
      next = std::min(m_next_kill_ms, m_removal_since_ms + k_client_grace_ms);
    }
    if (m_escalate_ms > 0) {
      next = std::min(next, m_escalate_ms);
    }
    next = std::min(next, m_pids.next_ms());
  }
  if (m_engine_error_window) {
    next = std::min(next, m_start_ms + k_engine_error_window_ms);
  }
  return static_cast<int>(std::clamp<int64_t>(next - now, 0, 60'000));
}

void RunLoop::loop() {
  while (!m_client_status || !m_out.at_end() || !m_err.at_end()) {
    pollfd fds[6] = {{m_signals.fd(), POLLIN, 0},
                     {m_out.wants_input() ? m_out.from_fd() : -1, POLLIN, 0},
                     {m_err.wants_input() ? m_err.from_fd() : -1, POLLIN, 0},
                     {m_out.has_pending() ? m_out.to_fd() : -1, POLLOUT, 0},
                     {m_err.has_pending() ? m_err.to_fd() : -1, POLLOUT, 0},
                     {m_oom.fd(), POLLIN, 0}};
    int ready = ::poll(fds, 6, poll_timeout());
    if (ready < 0 && errno != EINTR) {
      throw Fatal(std::string("poll failed: ") + std::strerror(errno));
    }
    serve_ready(fds);
    if (!m_client_status) {
      m_pids.sample(monotonic_ms());
    }
    enforce_deadlines();
  }
}

// Signals, the client's output, the caller's room for it and OOM events, as poll found them.
void RunLoop::serve_ready(const pollfd* fds) {
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
  if ((fds[5].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
    m_oom.read_available();
  }
}

void RunLoop::update_engine_error_hold() {
  if (m_engine_error_window && monotonic_ms() >= m_start_ms + k_engine_error_window_ms) {
    m_engine_error_window = false;
  }
  bool small = m_err.pending().size() < StreamRelay::k_max_pending / 2;
  // A missing script is held whenever it comes (a loaded engine starts containers late): the
  // interpreter ends right after saying it, and any other output releases it.
  bool missing_script = m_out.bytes() == 0 && m_err.pending().size() < 4096 &&
                        starts_like_missing_script(m_err.pending());
  // The API client's errors come typed (take_api_fault): its stderr is the program's alone.
  bool client_lines = !m_create && small;
  if ((client_lines && m_engine_error_window && starts_like_engine_error(m_err.pending())) ||
      missing_script || (client_lines && starts_like_engine_lost(m_err.pending()))) {
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
    m_remover.reap();
    m_signaller.reap();
    return;
  }
  if (m_client_status) {
    return;
  }
  bool repeated = m_received_signal.has_value();
  m_received_signal = sig;
  if (repeated) {
    request_removal(monotonic_ms());
    return;
  }
  signal_container(sig);
  m_escalate_ms = monotonic_ms() + k_signal_grace_ms;
}

void RunLoop::on_client_exit(int status) {
  m_client_status = decode_wait_status(status);
  m_client = -1;
  spdlog::debug("engine {} run: client exited {} at {:.3f} after {} ms", m_engine.kind,
                m_client_status->code, steady_ms(), monotonic_ms() - m_start_ms);
}

// The deadline, or a signal the container did not obey, decides removal; it is retried while the
// client lives (the container may not exist yet), until the client has had its grace.
void RunLoop::enforce_deadlines() {
  if (m_client_status) {
    return;
  }
  int64_t now = monotonic_ms();
  if (now >= m_deadline_ms && m_removal_since_ms == 0) {
    m_timed_out = !m_received_signal;  // a signal that came first names the outcome
    request_removal(now);
  }
  if (m_escalate_ms > 0 && now >= m_escalate_ms) {
    m_escalate_ms = 0;
    request_removal(now);
  }
  if (m_removal_since_ms > 0 && now >= m_next_kill_ms) {
    remove_container();
    m_next_kill_ms = now + k_kill_retry_ms;
  }
  if (m_removal_since_ms > 0 && now >= m_removal_since_ms + k_client_grace_ms) {
    stop_waiting_for_client();
  }
}

void RunLoop::request_removal(int64_t now) {
  if (m_removal_since_ms == 0) {
    m_removal_since_ms = now;
    m_next_kill_ms = now;
  }
}

// The engine neither removed the container nor let the client return: stop the client and
// leave the container to the guardian, which retries until the engine answers.
void RunLoop::stop_waiting_for_client() {
  if (!m_client_abandoned && m_client > 0) {
    m_client_abandoned = true;
    ::kill(m_client, SIGKILL);
  }
}

// A warm container's memory cgroup counts its OOM kills, so the count read before and after the
// run decides at once where this machine can read it (the engine's `oom` event came more than
// 5 s late in CI at -j3).
// Otherwise the events watched since before the container existed decide; without them, the
// engine's event log is asked after the fact (which a busy engine may have rotated past the OOM).
bool RunLoop::oom_killed() {
  auto kills = read_oom_kill_count(m_oom_counter.get());
  if (kills && m_oom_kills_before) {
    return *kills > *m_oom_kills_before;
  }
  auto seen = m_oom.oom_killed(k_oom_wait, k_oom_wait);
  return seen ? *seen : oom_from_event_log();
}

bool RunLoop::oom_from_event_log() const {
  int64_t since = (wall_clock_ms() - (monotonic_ms() - m_start_ms)) / 1000 - 1;
  int64_t until = wall_clock_ms() / 1000 + 1;
  return EngineClient(m_engine).oom_event(m_spec.container_name(), since, until);
}

RunFacts RunLoop::facts() {
  RunFacts facts;
  if (m_client_status) {
    facts.client_code = m_client_status->code;
  }
  facts.timed_out = m_timed_out;
  facts.received_signal = m_received_signal;
  facts.client_abandoned = m_client_abandoned;
  facts.stdout_head = m_out.head();
  facts.stdout_bytes = m_out.bytes();
  facts.stderr_head = m_err.head();
  facts.stderr_last = m_err.last();
  facts.over_api = m_create.has_value();
  if (m_client_status) {
    facts.api_fault = take_api_fault();
  }
  if (m_spec.one_stream) {
    read_program_stderr_from_stdout(facts);
  }
  // Asked of the engine only when the decision depends on it: a plain SIGKILL exit.
  facts.oom_event =
      facts.client_code == 128 + SIGKILL && !m_timed_out && !m_received_signal && oom_killed();
  return facts;
}

ContainerResult RunLoop::classify(const Policy& policy) {
  Outcome outcome = classify_outcome(facts(), m_spec, policy);
  m_engine_lost = outcome.engine_lost;
  if (outcome.replaces_engine_output) {
    m_err.discard_pending();
  }
  m_err.release_hold();
  m_out.flush();
  m_err.flush();
  ContainerResult result;
  result.status = outcome.status;
  result.exit_code = outcome.exit_code;
  result.signal = outcome.signal;
  result.message = std::move(outcome.message);
  result.stdout_bytes = m_out.bytes();
  result.stderr_bytes = m_err.bytes();
  result.stdout_tail = m_out.tail();
  result.stderr_tail = m_err.tail();
  result.limit_facts = limit_facts(result);
  return result;
}

// The program's own last stderr lines: in the stdout stream when the two are one.
std::string RunLoop::program_stderr_last(const ContainerResult& result) const {
  const StreamRelay& stream = m_spec.one_stream ? m_out : m_err;
  const std::string& tail = m_spec.one_stream ? result.stdout_tail : result.stderr_tail;
  std::string last = stream.last();
  return tail.size() > last.size() ? tail : last;
}

LimitFacts RunLoop::limit_facts(const ContainerResult& result) const {
  LimitFacts facts;
  facts.exit_code = result.exit_code;
  facts.timed_out = result.status == RunStatus::timeout;
  facts.oom_killed = result.status == RunStatus::oom;
  facts.pids_refused = m_pids.refused();
  facts.stderr_last = program_stderr_last(result);
  facts.workspace = m_spec.workspace.string();
  return facts;
}

}  // namespace

ContainerResult run_container(const Engine& engine, const EngineCall& call, const RunSpec& spec,
                              const Policy& policy) {
  RunLoop loop(engine, spec, policy);
  return loop.run(call, policy);
}

}  // namespace sandshim::shim
