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
#include <ctime>
#include <fstream>
#include <iostream>

#include "broker/settings.hpp"
#include "broker/unix_socket.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/io.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "policy/broker_policy.hpp"
#include "policy/environment.hpp"
#include "policy/reach.hpp"
#include "policy/workspace.hpp"
#include "run/git_stage.hpp"
#include "run/interpreter_fit.hpp"
#include "run/run_request.hpp"

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

// The directory descriptor a request carries: a run's cwd; / for the verbs that need none.
UniqueFd directory_of(Request& request) {
  if (auto* run = std::get_if<RunCall>(&request.call)) {
    return open_cwd(run->cwd);
  }
  return UniqueFd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
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

// What a run under sandbox.workspace = rw handed back of git's state, carried to the host's .git
// here, as the caller (the broker's user never writes it); one line when not all of it went.
void carry_git_state(const GitHandback& git, std::vector<UniqueFd>& fds, int64_t since_s) {
  shim::HandedGit handed{git.workspace, git.git_id, {}, git.left_behind};
  size_t next = 0;
  for (const GitFileHanded& file : git.files) {
    UniqueFd content = file.written && next < fds.size() ? std::move(fds[next++]) : UniqueFd();
    handed.files.push_back({file.name, file.host_mark, std::move(content)});
  }
  if (next != fds.size() || written_files(Exit{0, std::nullopt, git, std::nullopt}) != next) {
    say("git: the broker's answer came without the files the run wrote; the host's .git is as "
        "it was");
    return;
  }
  shim::GitCarry carry = shim::carry_handed(handed, since_s);
  if (!carry.kept.empty() || !carry.left_behind.empty() || !carry.removed.empty()) {
    say(shim::describe_carry(carry));
  }
}

// The names that steer the host which the run created (its row names them): moved aside here, as
// the caller, as direct mode moves them (the broker's user never renames the caller's files); the
// protected links it removed or replaced, made again.
void settle_protected_names(const CreatedNames& created) {
  std::vector<std::string> lines =
      shim::move_created_aside(created.workspace, created.run_id, created.names);
  std::vector<shim::ProtectedLink> links;
  for (const auto& [name, text] : created.links) {
    links.push_back({name, 0, text});
  }
  std::vector<std::string> restored = shim::restore_protected_links(created.workspace, links);
  lines.insert(lines.end(), restored.begin(), restored.end());
  if (!lines.empty()) {
    say(shim::created_names_summary(lines) +
        (created.names.empty() ? "" : shim::k_created_names_advice));
  }
}

// Relays signals until the broker's Exit frame comes, or the connection ends without one.
int await_exit(int socket, const fs::path& path, ForwardedSignals& signals, int64_t since_s) {
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
      ReadResult frame = read_frame(socket, 5000, k_max_git_files);
      if (frame.status != ReadStatus::ok) {
        return broker_gone(path, "connection closed before the exit status");
      }
      auto decoded = decode_exit(frame.frame.payload);
      if (const auto* error = std::get_if<ProtocolError>(&decoded)) {
        return broker_gone(path, "bad answer: " + error->message);
      }
      spdlog::debug("broker: exit received at {:.3f}", precise_monotonic_ms());
      const Exit& exit = std::get<Exit>(decoded);
      if (exit.git) {
        carry_git_state(*exit.git, frame.frame.fds, since_s);
      }
      if (exit.created) {
        settle_protected_names(*exit.created);
      }
      return finish_like(exit);
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

std::string required_but_absent(const ClientSettings& settings) {
  return "no broker answers at " + settings.socket.string() + " (" + std::strerror(errno) +
         ") and " + settings.source +
         " requires one (broker.mode = required): start it with `systemctl start "
         "sandshim.socket` or `install/setup.sh`; nothing ran";
}

// The broker's socket when one answers; nullopt when direct mode may run; throws the one line
// of a required broker that does not answer.
std::optional<UniqueFd> connect_broker(const ClientSettings& settings) {
  if (settings.mode == BrokerMode::off) {
    return std::nullopt;
  }
  auto socket = connect_unix(settings.socket);
  if (!socket && settings.mode == BrokerMode::required) {
    throw Fatal(required_but_absent(settings));
  }
  return socket;
}

struct Stdio {
  int in = STDIN_FILENO;
  int out = STDOUT_FILENO;
  int err = STDERR_FILENO;
};

// Sends the request with this process's stdio (or `stdio`) and its directory, relays signals
// until the broker's answer.
int exchange(int socket, Request request, const fs::path& path, Stdio stdio = {}) {
  UniqueFd directory = directory_of(request);
  ForwardedSignals signals;
  if (!send_frame(socket, encode(request), {stdio.in, stdio.out, stdio.err, directory.get()})) {
    return broker_gone(path, "it closed the connection before the request");
  }
  spdlog::debug("broker: request sent at {:.3f}", precise_monotonic_ms());
  directory.reset();
  return await_exit(socket, path, signals, static_cast<int64_t>(::time(nullptr)));
}

// What this caller's own policy lets into a sandbox; the built-in allowlist when it cannot load.
shim::Policy own_policy(const fs::path& cwd) {
  try {
    fs::path workspace = cwd.empty() ? fs::path() : find_git_root(cwd).value_or(cwd);
    return shim::load_policy(shim::policy_inputs(std::nullopt, workspace));
  } catch (const Fatal&) {
    return shim::Policy{};
  }
}

std::string log_level() {
  return environment::log_level().value_or("").substr(0, 16);
}

CompletionFields completion_fields(const std::string& tool_use_id,
                                   const audit::DecisionCompletion& completion) {
  return {tool_use_id, completion.session_id, completion.outcome, completion.exit_code,
          completion.tool_response_tail};
}

DecisionFields decision_fields(const audit::DecisionRecord& record) {
  return {record.agent,
          record.event,
          record.session_id,
          record.tool_use_id,
          record.cwd,
          record.original_command,
          record.rewritten_command,
          audit::to_string(record.decision),
          record.answer,
          record.permission_mode,
          record.reason,
          record.rule,
          record.payload_bytes};
}

// A hook's write: nullopt without a broker (not required), else the broker's answer.
std::optional<int> record_through_broker(RecordCall call) {
  ClientSettings settings = client_settings();
  std::optional<UniqueFd> socket = connect_broker(settings);
  if (!socket) {
    return std::nullopt;
  }
  int code = exchange(socket->get(), Request{std::move(call), log_level()}, settings.socket);
  if (code != exit_code::k_ok && code != k_record_not_pending) {
    throw Fatal("the broker at " + settings.socket.string() +
                " did not record the hook's decision (exit " + std::to_string(code) +
                "); nothing ran");
  }
  return code;
}

// A pipe whose write end goes to the broker; its read end holds what the worker wrote. The
// answer is a few KiB; a larger pipe keeps a long one from blocking the worker.
Pipe answer_pipe() {
  Pipe pipe = make_pipe();
  ::fcntl(pipe.write.get(), F_SETPIPE_SZ, 1 << 20);
  return pipe;
}

// What a pipe holds once every writer closed it, up to `cap` bytes.
std::string drain(int fd, size_t cap) {
  return read_to_end(fd, cap).value_or("");
}

// What a verb that answers on stdout (status, session_close) wrote, its errors, its exit code.
struct Answered {
  int code = 0;
  std::string text;
  std::string errors;
};

// The exchange of such a verb on a connected socket: the worker's answer on a pipe, its errors
// on another, so neither reaches this process's own stdout (a hook's is the agent's protocol).
Answered exchange_for_answer(int socket, Request request, const fs::path& path) {
  Pipe out = answer_pipe();
  Pipe err = answer_pipe();
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Answered answered;
  answered.code =
      exchange(socket, std::move(request), path, {null.get(), out.write.get(), err.write.get()});
  out.write.reset();
  err.write.reset();
  answered.text = drain(out.read.get(), k_max_frame_bytes);
  answered.errors = drain(err.read.get(), 4096);
  return answered;
}

// Why a verb's answer is missing: the worker's first error line, else the decoder's rule.
std::string missing_answer(const char* verb, const Answered& answered, const ProtocolError& error) {
  std::string why = trim(answered.errors).empty() ? error.message : trim(answered.errors);
  return "the broker did not answer `" + std::string(verb) + "` (exit " +
         std::to_string(answered.code) + "): " + first_line_of(why);
}

StatusAnswer ask_status(int socket, const fs::path& path) {
  StatusAnswer answer;
  answer.broker = peer_credentials(socket);
  Answered answered = exchange_for_answer(socket, Request{StatusCall{}, ""}, path);
  auto decoded = decode_status(answered.text);
  if (const auto* status = std::get_if<BrokerStatus>(&decoded)) {
    answer.status = *status;
  } else {
    answer.problem = missing_answer("status", answered, std::get<ProtocolError>(decoded));
  }
  return answer;
}

// What the project around the caller's cwd asks of the interpreter a shim call runs, read here,
// as the caller, so the broker opens no file of the caller's (`sandshim run`'s argv is options
// the broker parses: none sent). Nothing when the cwd is no workspace the run could have, or
// when the ask is one the protocol would refuse (the run then keeps the image).
std::optional<VersionAskField> callers_version_ask(const shim::RunRequest& local,
                                                   const std::vector<std::string>& argv) {
  if (local.invoked_as == "run" || local.cwd.empty()) {
    return std::nullopt;
  }
  try {
    fs::path workspace = shim::resolve_workspace(local.cwd, local.home);
    std::optional<shim::VersionAsk> ask =
        shim::project_version_ask(argv.front(), local.cwd, workspace);
    if (!ask) {
      return std::nullopt;
    }
    VersionAskField field{ask->source, ask->range};
    return valid_version_ask(field) ? std::optional(field) : std::nullopt;
  } catch (const Fatal&) {
    return std::nullopt;  // the broker refuses that cwd with its own line
  }
}

// The caller's git identity, read here as the caller, as far as the protocol carries it.
std::vector<std::pair<std::string, std::string>> sendable_git_identity(const fs::path& home) {
  auto identity = shim::global_git_identity(home);
  std::erase_if(identity,
                [](const auto& entry) { return entry.second.size() > k_max_git_identity_bytes; });
  return identity;
}

}  // namespace

std::optional<StatusAnswer> status_through_broker(const ClientSettings& settings) {
  if (settings.mode == BrokerMode::off) {
    return std::nullopt;
  }
  std::optional<UniqueFd> socket = connect_unix(settings.socket);
  if (!socket) {
    return std::nullopt;
  }
  return ask_status(socket->get(), settings.socket);
}

Request run_request_for(std::string invoked_as, std::vector<std::string> argv,
                        std::string agent_command) {
  shim::RunRequest local = shim::request_from_process(invoked_as, argv);
  RunCall call;
  call.invoked_as = std::move(invoked_as);
  call.argv = std::move(argv);
  call.env = shim::allowed_entries(local.environment, own_policy(local.cwd));
  if (call.env.size() > k_max_list_entries) {
    call.env.resize(k_max_list_entries);
  }
  call.agent = local.caller.agent;
  call.session_id = local.caller.agent_session;
  call.tool_use_id = local.caller.tool_use_id;
  if (call.tool_use_id.empty()) {
    call.agent_command = std::move(agent_command);
  }
  call.dry_run = shim::dry_run_requested(local);
  call.user_config = user_config_texts();
  call.terminal = terminal_size();
  call.version_ask = callers_version_ask(local, call.argv);
  call.git_identity = sendable_git_identity(local.home);
  return Request{std::move(call), log_level()};
}

Request audit_request_for(std::vector<std::string> args) {
  return Request{AuditCall{std::move(args)}, log_level()};
}

std::optional<int> run_through_broker(const std::function<Request()>& build_request) {
  ClientSettings settings = client_settings();
  std::optional<UniqueFd> socket;
  try {
    socket = connect_broker(settings);
  } catch (const Fatal& e) {
    return say(e.what());
  }
  if (!socket) {
    return std::nullopt;
  }
  return exchange(socket->get(), build_request(), settings.socket);
}

std::optional<std::string> record_decision_through_broker(const audit::DecisionRecord& record) {
  if (!record_through_broker(RecordCall{decision_fields(record)})) {
    return std::nullopt;
  }
  return "";  // the broker makes the id
}

std::optional<bool> complete_decision_through_broker(const std::string& tool_use_id,
                                                     const audit::DecisionCompletion& completion) {
  auto code = record_through_broker(RecordCall{completion_fields(tool_use_id, completion)});
  if (!code) {
    return std::nullopt;
  }
  return *code == exit_code::k_ok;
}

std::optional<size_t> close_session_through_broker(const std::string& agent,
                                                   const std::string& session_id) {
  ClientSettings settings = client_settings();
  std::optional<UniqueFd> socket = connect_broker(settings);
  if (!socket) {
    return std::nullopt;
  }
  Answered answered = exchange_for_answer(
      socket->get(), Request{SessionCloseCall{agent, session_id}, log_level()}, settings.socket);
  auto decoded = decode_session_closed(answered.text);
  if (const auto* closed = std::get_if<SessionClosed>(&decoded);
      closed != nullptr && answered.code == exit_code::k_ok) {
    return static_cast<size_t>(closed->closed);
  }
  ProtocolError error = std::holds_alternative<ProtocolError>(decoded)
                            ? std::get<ProtocolError>(decoded)
                            : ProtocolError{"the worker failed after it answered"};
  throw Fatal(missing_answer("session_close", answered, error) + " at " + settings.socket.string());
}

}  // namespace sandshim::broker
