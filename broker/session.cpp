#include "broker/session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/serve.hpp"
#include "broker/workspace_config.hpp"
#include "broker/workspace_identity.hpp"
#include "common/error.hpp"
#include "common/io.hpp"
#include "common/process.hpp"
#include "run/caller.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

std::string home_of(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw != nullptr && pw->pw_dir != nullptr ? pw->pw_dir : "/nonexistent";
}

// Writes one line to the caller's stderr (the descriptor it sent), as direct mode would.
void tell_caller(int stderr_fd, const std::string& line) {
  std::string text = "sandshim: " + line + "\n";
  if (stderr_fd >= 0) {
    (void)!::write(stderr_fd, text.data(), text.size());
  }
}

void answer(int socket, const Exit& exit, const std::vector<int>& fds = {}) {
  send_frame(socket, encode(exit), fds);
}

// The worker logs to the caller's stderr at the level the client asked (its SANDSHIM_LOG).
void follow_callers_log_level(const std::string& level) {
  spdlog::set_level(level.empty() ? spdlog::level::warn : spdlog::level::from_str(level));
}

// A run's cwd: admitted as a workspace, its .sandshim.conf files read through the descriptor,
// and entered (the worker's cwd is the caller's directory, never a name). The refusal, if any.
std::string enter_callers_directory(const RunCall& run, int cwd_fd, CallerFacts& facts) {
  try {
    facts.cwd = admit_cwd(cwd_fd, run.cwd, facts.home, engine_socket_paths());
    facts.workspace_texts = read_workspace_configs(cwd_fd, facts.cwd);
  } catch (const Fatal& e) {
    facts.cwd = run.cwd;
    return e.what();
  }
  if (::fchdir(cwd_fd) != 0) {
    return std::string("cannot enter the caller's directory: ") + std::strerror(errno);
  }
  return "";
}

// What the worker learns before serving: who asks (the kernel's word), their home, and for a
// run the directory; the refusal, if any.
std::string prepare(const Request& request, int cwd_fd, const PeerCredentials& peer,
                    CallerFacts& facts) {
  facts.peer = peer;
  facts.home = home_of(peer.uid);
  shim::act_for_caller({peer.uid, peer.gid, peer.pid});
  if (const auto* run = std::get_if<RunCall>(&request.call)) {
    return enter_callers_directory(*run, cwd_fd, facts);
  }
  return "";
}

// The worker's exit code, told to the session right before the worker exits, so that the
// client has it without waiting for the worker's teardown and the SIGCHLD that follows it. A run
// told it already, once its row was complete, with what it hands back of git's state; the
// session reads the first frame only.
void tell_session_exit(int exit_channel, const Exit& exit, const std::vector<int>& fds = {}) {
  send_frame(exit_channel, encode(exit), fds);
}

void tell_session_exit_code(int exit_channel, int code) {
  tell_session_exit(exit_channel, Exit{code & 0xff, std::nullopt, std::nullopt, std::nullopt});
}

// What a run under rw hands back, as the client gets it: git's state (the files' contents go as
// descriptors, in order), the protected names it created, for the client to move aside, and the
// protected links it removed, for the client to make again.
Exit exit_handing_back(int code, const shim::RunHandback& handback, std::vector<int>& fds) {
  Exit exit{code & 0xff, std::nullopt, std::nullopt, std::nullopt};
  if (!handback.created_names.empty() || !handback.restore_links.empty()) {
    exit.created =
        CreatedNames{handback.workspace.string(), handback.run_id, handback.created_names, {}};
    for (const shim::ProtectedLink& link : handback.restore_links) {
      exit.created->links.emplace_back(link.name, link.text);
    }
  }
  const shim::HandedGit& handed = handback.git;
  if (handed.empty()) {
    return exit;
  }
  GitHandback git{handed.workspace.string(), handed.git_id, {}, handed.left_behind};
  for (const shim::HandedGitFile& file : handed.files) {
    git.files.push_back({file.name, file.host_mark, file.content.valid()});
    if (file.content.valid()) {
      fds.push_back(file.content.get());
    }
  }
  exit.git = std::move(git);
  return exit;
}

// The worker's ends of its pipes with the session, and what it keeps of the broker's own.
struct WorkerChannel {
  int exit_write = -1;   // told the exit code (the session reads the first byte only)
  int caller_gone = -1;  // at its end once the client hung up after its answer (or later)
  int own_log = -1;      // the broker's stderr, from before the caller's replaced it
  spdlog::level::level_enum own_level = spdlog::level::info;
};

// How long a worker whose caller has its answer waits for the client's exit before the rest of
// its work (a client that lingers delays the pool's refill by this much at most).
constexpr int k_caller_exit_wait_ms = 100;

// The caller's descriptors go (its pipes end when the client exits, not when the worker is
// done); what the worker still logs goes to the broker's log, at the broker's level.
void let_callers_stdio_go(const WorkerChannel& channel) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  ::dup2(null.get(), STDIN_FILENO);
  ::dup2(null.get(), STDOUT_FILENO);
  ::dup2(channel.own_log >= 0 ? channel.own_log : null.get(), STDERR_FILENO);
  spdlog::set_level(channel.own_level);
}

// A run's outcome, as soon as its row is complete: the session answers the client, the caller's
// descriptors go, and the worker's last work (the WAL's fold, the pool's refill) waits until the
// client has exited, so that it does not compete with the client's last steps for the CPU.
void tell_outcome_then_let_go(const WorkerChannel& channel, int code,
                              const shim::RunHandback& handback) {
  std::vector<int> fds;
  tell_session_exit(channel.exit_write, exit_handing_back(code, handback, fds), fds);
  spdlog::debug("broker: outcome told at {:.3f}", precise_monotonic_ms());
  let_callers_stdio_go(channel);
  if (channel.caller_gone >= 0) {
    pollfd gone{channel.caller_gone, POLLIN, 0};
    retry_on_eintr([&] { return ::poll(&gone, 1, k_caller_exit_wait_ms); });
  }
}

// Runs the request, or records its refusal, and returns the exit code for the caller; a failure
// is one line on the caller's stderr, as the shim would print it.
int serve_or_refuse(const Request& request, std::vector<UniqueFd>& fds, const PeerCredentials& peer,
                    const SessionSetup& setup, const WorkerChannel& channel,
                    std::shared_ptr<shim::PreopenedStore> store) {
  int code = exit_code::k_sandbox_error;
  CallerFacts facts;
  // Only a run takes it; another verb opens its own connection and may fork to fold the WAL,
  // and no SQLite state may cross a fork.
  if (std::holds_alternative<RunCall>(request.call)) {
    facts.preopened_store = std::move(store);
  }
  store.reset();
  facts.tell_outcome = [&channel](int exit_code, shim::RunHandback handback) {
    tell_outcome_then_let_go(channel, exit_code, handback);
  };
  try {
    std::string refusal = prepare(request, fds[3].get(), peer, facts);
    fds.clear();
    refusal = setup.refusal.empty() ? refusal : setup.refusal;
    code =
        refusal.empty() ? serve_request(request, facts) : refuse_request(request, facts, refusal);
  } catch (const Fatal& e) {
    std::cerr << "sandshim: " << e.what() << std::endl;
    code = e.code();
  } catch (const std::exception& e) {
    std::cerr << "sandshim: internal error: " << e.what() << "; nothing ran" << std::endl;
  }
  return code;
}

Request read_request(int socket, const SessionSetup& setup, std::vector<UniqueFd>& fds);

// What a spare session is handed: the connection, and the daemon's refusal of its request when
// it refuses it unread (the frame's payload; empty otherwise).
struct Handoff {
  UniqueFd connection;
  std::string refusal;
};

// A handoff's payload: this tag, then the refusal (a frame is never empty).
constexpr std::string_view k_handoff_tag = "handoff:";

bool send_handoff(int channel, int connection, const std::string& refusal) {
  return send_frame(channel, std::string(k_handoff_tag) + refusal, {connection});
}

// The daemon's handoff to a session, or the session's to its worker; nullopt when the other end
// closed first (the daemon stopped).
std::optional<Handoff> receive_handoff(int channel) {
  ReadResult got = read_frame(channel, -1, 1);
  if (got.status != ReadStatus::ok || got.frame.fds.size() != 1 ||
      !got.frame.payload.starts_with(k_handoff_tag)) {
    return std::nullopt;
  }
  return Handoff{std::move(got.frame.fds[0]), got.frame.payload.substr(k_handoff_tag.size())};
}

// The connection's peer, by the kernel's word; a socket without one ends the worker (125).
PeerCredentials peer_or_exit(int connection) {
  try {
    return peer_credentials(connection);
  } catch (const Fatal& e) {
    spdlog::warn("{}", e.what());
    ::_exit(exit_code::k_sandbox_error);
  }
}

// The worker: forked before its connection comes, it opens the broker's audit store, then takes
// the connection from its session, reads the request itself (the connection is the session's
// again once `request_read` is closed) and serves it for the caller with the caller's stdio, in
// the broker's own environment (nothing of the caller's process but the request's fields
// reaches it).
[[noreturn]] void become_worker(UniqueFd from_session, int request_timeout_ms,
                                WorkerChannel channel, UniqueFd request_read) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  std::shared_ptr<shim::PreopenedStore> store = preopen_broker_store();
  std::optional<Handoff> handoff = receive_handoff(from_session.get());
  if (!handoff) {
    ::_exit(0);
  }
  from_session.reset();
  const PeerCredentials peer = peer_or_exit(handoff->connection.get());
  const SessionSetup setup{request_timeout_ms, handoff->refusal};
  std::vector<UniqueFd> fds;
  Request request = read_request(handoff->connection.get(), setup, fds);
  handoff->connection.reset();
  request_read.reset();
  channel.own_log = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  channel.own_level = spdlog::get_level();
  for (int fd = 0; fd < 3; ++fd) {
    ::dup2(fds[static_cast<size_t>(fd)].get(), fd);
  }
  follow_callers_log_level(request.log_level);
  spdlog::debug("broker: worker started at {:.3f}", precise_monotonic_ms());
  int code = serve_or_refuse(request, fds, peer, setup, channel, std::move(store));
  std::cout.flush();
  std::cerr.flush();
  spdlog::debug("broker: worker ended at {:.3f}", precise_monotonic_ms());
  tell_session_exit_code(channel.exit_write, code);
  ::_exit(code);
}

// A pipe's read and write ends (both invalid when none could be made).
std::pair<UniqueFd, UniqueFd> pipe_pair() {
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    return {};
  }
  return {UniqueFd(ends[0]), UniqueFd(ends[1])};
}

UniqueFd session_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  return UniqueFd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

Exit exit_of(int status) {
  ExitStatus decoded = decode_wait_status(status);
  return {decoded.code & 0xff, decoded.signal, std::nullopt, std::nullopt};
}

// A frame from the client while the worker runs: a signal to deliver, or the end of the client.
bool relay_client_frame(int socket, pid_t worker) {
  ReadResult frame = read_frame(socket, 2000, 0);
  if (frame.status != ReadStatus::ok) {
    spdlog::info("client of worker {} went away: ending its run as if it were killed", worker);
    ::kill(worker, SIGKILL);
    return false;
  }
  auto message = decode_client_message(frame.frame.payload);
  if (const auto* signal = std::get_if<ClientMessage>(&message)) {
    if (const auto* forwarded = std::get_if<Signal>(signal)) {
      ::kill(worker, forwarded->number);
    }
  }
  return true;
}

// What the worker told before exiting (it exits with that code), with the descriptors of git's
// state it hands back, or none: it died without telling (killed, crashed), or the channel is at
// its end; the worker's wait status then decides.
struct ToldExit {
  Exit exit;
  std::vector<UniqueFd> fds;
};
std::optional<ToldExit> told_exit(int exit_channel) {
  ReadResult frame = read_frame(exit_channel, 2000, k_max_git_files);
  if (frame.status != ReadStatus::ok) {
    return std::nullopt;
  }
  auto decoded = decode_exit(frame.frame.payload);
  if (const auto* exit = std::get_if<Exit>(&decoded);
      exit != nullptr && written_files(*exit) == frame.frame.fds.size()) {
    return ToldExit{*exit, std::move(frame.frame.fds)};
  }
  return std::nullopt;
}

// The client has its answer: once it has hung up (its process is ending), the worker may go on
// with its last work. The session still reaps the worker, so that no zombie is left to a PID 1
// that may not reap, and the daemon counts the run until its worker is gone.
[[noreturn]] void answer_and_reap(int socket, pid_t worker, const ToldExit& told, int caller_gone) {
  std::vector<int> fds;
  for (const UniqueFd& fd : told.fds) {
    fds.push_back(fd.get());
  }
  answer(socket, told.exit, fds);
  pollfd hangup{socket, POLLIN | POLLRDHUP, 0};
  retry_on_eintr([&] { return ::poll(&hangup, 1, k_caller_exit_wait_ms); });
  ::close(caller_gone);
  int status = 0;
  retry_on_eintr([&] { return ::waitpid(worker, &status, 0); });
  ::_exit(0);
}

// Until the worker ends: deliver the client's signals, and kill the run when the client goes.
[[noreturn]] void supervise(int socket, pid_t worker, int signal_fd, int exit_pipe,
                            int caller_gone) {
  bool client_alive = true;
  while (true) {
    pollfd fds[3] = {{signal_fd, POLLIN, 0},
                     {socket, client_alive ? short{POLLIN} : short{0}, 0},
                     {exit_pipe, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) {
      ::kill(worker, SIGKILL);
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      if (auto told = told_exit(exit_pipe)) {
        answer_and_reap(socket, worker, *told, caller_gone);
      }
      exit_pipe = -1;  // at its end without a code: poll ignores it from now on
    }
    int status = 0;
    if (::waitpid(worker, &status, WNOHANG) == worker) {
      answer(socket, exit_of(status));
      ::_exit(0);
    }
    signalfd_siginfo info{};
    while (::read(signal_fd, &info, sizeof info) == sizeof info) {
    }
    if (client_alive && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      client_alive = relay_client_frame(socket, worker);
    }
  }
}

// The worker reads and checks the request; on a broken one it tells the client (when it sent a
// stderr) and exits 125, which the session answers.
Request read_request(int socket, const SessionSetup& setup, std::vector<UniqueFd>& fds) {
  ReadResult frame = read_frame(socket, setup.request_timeout_ms, k_request_fds);
  if (frame.status != ReadStatus::ok) {
    ::_exit(exit_code::k_sandbox_error);
  }
  fds = std::move(frame.frame.fds);
  int stderr_fd = fds.size() > 2 ? fds[2].get() : -1;
  auto message = decode_client_message(frame.frame.payload);
  std::string problem;
  if (const auto* error = std::get_if<ProtocolError>(&message)) {
    problem = "the broker refused the request: " + error->message + "; nothing ran";
  } else if (!std::holds_alternative<Request>(std::get<ClientMessage>(message))) {
    problem = "the broker expected a request first; nothing ran";
  } else if (fds.size() != static_cast<size_t>(k_request_fds)) {
    problem = "the request came without stdin, stdout, stderr and cwd; nothing ran";
  }
  if (!problem.empty()) {
    tell_caller(stderr_fd, problem);
    ::_exit(exit_code::k_sandbox_error);
  }
  return std::get<Request>(std::get<ClientMessage>(message));
}

// The daemon's listener, signal descriptor and other users' waiting connections stay with it.
void close_inherited_fds(int keep) {
  std::vector<int> open_fds;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd", ec)) {
    int fd = std::atoi(entry.path().filename().c_str());
    if (fd > 2 && fd != keep) {
      open_fds.push_back(fd);
    }
  }
  for (int fd : open_fds) {
    ::close(fd);
  }
}

// A socket pair's two ends (both invalid when none could be made).
std::pair<UniqueFd, UniqueFd> socket_pair() {
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return {};
  }
  return {UniqueFd(ends[0]), UniqueFd(ends[1])};
}

// A session, forked before its connection comes: it forks its worker at once (which opens the
// audit store meanwhile), waits for the daemon's handoff, passes the connection on to the
// worker, and once the worker has read the request supervises the run.
[[noreturn]] void run_session(UniqueFd from_daemon, int request_timeout_ms) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  close_inherited_fds(from_daemon.get());
  UniqueFd signals = session_signals();
  // Without the first two pipes (no descriptor left) the worker's SIGCHLD still answers, a
  // little later, and a worker told nothing of its client's exit waits its longest for it.
  auto [exit_read, exit_write] = socket_pair();
  auto [gone_read, gone_write] = pipe_pair();
  auto [request_read, request_read_write] = pipe_pair();
  auto [to_worker, from_session] = socket_pair();
  pid_t worker = request_read.valid() && to_worker.valid() ? ::fork() : -1;
  if (worker == 0) {
    signals.reset();
    from_daemon.reset();
    exit_read.reset();
    gone_write.reset();
    request_read.reset();
    to_worker.reset();
    become_worker(std::move(from_session), request_timeout_ms, {exit_write.get(), gone_read.get()},
                  std::move(request_read_write));
  }
  exit_write.reset();
  gone_read.reset();
  request_read_write.reset();
  from_session.reset();
  std::optional<Handoff> handoff = receive_handoff(from_daemon.get());
  if (!handoff) {  // the daemon stopped: its spare goes with it
    ::_exit(0);
  }
  int connection = handoff->connection.get();
  if (worker < 0 || !send_handoff(to_worker.get(), connection, handoff->refusal)) {
    answer(connection, {exit_code::k_sandbox_error, std::nullopt, std::nullopt, std::nullopt});
    ::_exit(0);
  }
  // The connection is the worker's until it has read the request (or died).
  pollfd read{request_read.get(), POLLIN, 0};
  retry_on_eintr([&] { return ::poll(&read, 1, -1); });
  supervise(connection, worker, signals.get(), exit_read.get(), gone_write.release());
}

}  // namespace

std::optional<SpareSession> SpareSession::fork(int request_timeout_ms) {
  auto [daemon_end, session_end] = socket_pair();
  if (!daemon_end.valid()) {
    spdlog::warn("socketpair failed: {}; no session is ready", std::strerror(errno));
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    daemon_end.reset();
    run_session(std::move(session_end), request_timeout_ms);
  }
  if (pid < 0) {
    spdlog::warn("fork failed: {}; no session is ready", std::strerror(errno));
    return std::nullopt;
  }
  return SpareSession(pid, std::move(daemon_end));
}

SpareSession::SpareSession(pid_t pid, UniqueFd channel)
    : m_pid(pid), m_channel(std::move(channel)) {}

bool SpareSession::hand_over(int connection, const std::string& refusal) {
  bool sent = send_handoff(m_channel.get(), connection, refusal);
  m_channel.reset();
  return sent;
}

}  // namespace sandshim::broker
