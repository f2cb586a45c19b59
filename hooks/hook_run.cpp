#include "hooks/hook_run.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "audit/store.hpp"
#include "common/environment.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "hooks/agents/payload.hpp"
#include "hooks/decide.hpp"
#include "hooks/program_files.hpp"
#include "hooks/protected_paths.hpp"
#include "hooks/refusal_rules.hpp"
#include "hooks/rewrite.hpp"
#include "policy/broker_policy.hpp"
#include "run/caller.hpp"
#include "run/guardian.hpp"
#include "run/sandbox.hpp"

namespace sandshim::hooks {

namespace fs = std::filesystem;
using payload::Json;

namespace {

// Whether the runs a refusal names go through a broker, whose system file alone names images (no
// `--image host`): broker.mode = required, or auto with the broker's socket there (the broker is
// not asked: a connection would cost it a session per hook call).
bool broker_serves_runs(const shim::Policy& policy) {
  if (policy.broker_mode != "auto") {
    return policy.broker_mode == "required";
  }
  fs::path socket = policy.broker_socket.empty() ? fs::path(shim::k_default_broker_socket)
                                                 : fs::path(policy.broker_socket);
  struct stat st {};
  return ::stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

fs::path workspace_of(const fs::path& cwd) {
  std::error_code ec;
  fs::path start = cwd.empty() ? fs::current_path(ec) : cwd;
  return find_git_root(start).value_or(start);
}

constexpr std::string_view k_prefix = "sandshim: ";

// The logger writes its own `sandshim: <level>: ` in front.
std::string without_prefix(std::string_view line) {
  while (line.starts_with(k_prefix)) {
    line.remove_prefix(k_prefix.size());
  }
  return std::string(line);
}

// `export PATH='<shim dir>':"$PATH"`: what a session environment starts with.
// The image `sandshim run -- VENV/bin/python3` would use: a venv's python is named like the
// image's.
std::string python_image_of(const shim::Policy& policy) {
  for (const char* name : {"python3", "python"}) {
    if (auto it = policy.images.find(name); it != policy.images.end()) {
      return it->second;
    }
  }
  return "";
}

std::string path_line(const fs::path& shim_dir) {
  return "export PATH=" + shell_quote(shim_dir.string()) + ":\"$PATH\"";
}

// The run of one hook: what is known so far, so a failure at any step is still recorded and
// answered in the agent's own way.
class HookRun {
 public:
  HookRun(const HookOptions& options, const HookEnvironment& env)
      : m_options(options), m_env(env) {}

  HookReply answer(std::string_view text) {
    try {
      return answer_payload(text);
    } catch (const shim::PolicyError& e) {
      return fail_closed("policy-refused", "sandshim: " + std::string(e.what()) +
                                               "; nothing runs until the user fixes it");
    } catch (const std::exception& e) {
      return fail_closed("internal-error", "sandshim: internal error (" + std::string(e.what()) +
                                               "); the command was not run");
    }
  }

 private:
  HookReply answer_payload(std::string_view text) {
    m_payload_bytes = static_cast<int64_t>(text.size());
    m_adapter = m_options.agent ? *m_options.agent : nullptr;
    if (text.size() > k_max_payload_bytes) {
      return fail_closed(
          "payload-too-large",
          "sandshim: the hook payload is larger than 1 MiB; the command was not run");
    }
    Json body = Json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return fail_closed(
          "invalid-payload",
          "sandshim: the hook payload is not a JSON object; the command was not run");
    }
    m_event.event = event_name_of(body);
    std::optional<Agent> agent = resolve_agent(body);
    if (!agent) {
      return fail_closed("unknown-agent",
                         "sandshim: cannot tell which agent sent this hook "
                         "payload; install the hook with --agent");
    }
    m_adapter = *agent;
    return answer_event(body);
  }

  HookReply answer_event(const Json& body) {
    try {
      m_event = m_adapter->parse(body);
    } catch (const PayloadError& e) {
      return fail_closed("invalid-payload", "sandshim: the hook payload does not match " +
                                                std::string(m_adapter->audit_name) + "'s " +
                                                "format (" + e.what() +
                                                "); the command was not run");
    }
    if (!m_options.expected_event.empty() && m_event.event != m_options.expected_event) {
      return fail_closed("event-mismatch", "sandshim: this hook is installed for " +
                                               quoted(m_options.expected_event) + " but received " +
                                               quoted(m_event.event));
    }
    return answer_phase();
  }

  // Each phase of a tool call (before, after, session start, turn end) has its own answer.
  HookReply answer_phase() {
    switch (m_event.phase) {
      case Phase::before:
        return decide_event();
      case Phase::after:
      case Phase::after_failure:
        return complete_event("ran");
      case Phase::not_run:
        return complete_event("not-run");
      case Phase::session_start:
        return start_session();
      case Phase::turn_end:
        return end_turn();
      case Phase::unsupported:
        break;
    }
    return fail_closed("unknown-event", "sandshim: the hook event " + quoted(m_event.event) +
                                            " is not one sandshim handles");
  }

  // Cursor runs Claude Code's hooks with its own payloads; the payload says who really called
  // when it names its agent unmistakably.
  std::optional<Agent> resolve_agent(const Json& body) const {
    std::optional<Agent> detected = detect_agent(body);
    if (m_options.agent && !(detected && (*detected)->recognise(body) >= k_unmistakable)) {
      return m_options.agent;
    }
    return detected;
  }

  static std::string event_name_of(const Json& body) {
    for (const char* key : {"hook_event_name", "agent_action_name"}) {
      auto found = body.find(key);
      if (found != body.end() && found->is_string()) {
        return found->get<std::string>();
      }
    }
    return "";
  }

  HookReply decide_event() {
    m_policy = m_env.load_policy(m_event.cwd);
    Decision decision = decide_tool();
    decision.reason = agent_message(decision.reason);
    HookReply reply = m_adapter->answer(m_event, decision);
    bool recorded = record(decision, reply.sent);
    if (!recorded && m_env.audit_required) {
      return fail_closed("audit-unavailable", m_record_error);
    }
    if (!recorded && m_policy->audit_required) {
      return fail_closed("audit-unavailable",
                         "sandshim: the audit database cannot be written, so nothing runs "
                         "(audit.required = true); ask the user to check it");
    }
    spdlog::info("hook: {} {} -> {} ({})", m_adapter->flag, m_event.event,
                 audit::to_string(audit_decision(decision)), decision.rule);
    return reply;
  }

  Decision decide_tool() const {
    if (m_event.shell_tool) {
      return decide(m_event.command, decision_inputs());
    }
    if (m_event.file_tool) {
      return decide_file_write();
    }
    return Decision{Verdict::allow, "not-a-shell-tool", "sandshim: only shell commands are checked",
                    "", false};
  }

  // File tools may write anything but what the sandbox depends on.
  Decision decide_file_write() const {
    ProtectedPaths paths = protected_paths(*m_policy, workspace_of(m_event.cwd));
    for (const std::string& target : m_event.written_paths) {
      if (std::optional<std::string> what = protected_path_reason(target, m_event.cwd, paths)) {
        return Decision{Verdict::deny, "protected-path",
                        with_rule_footer(protected_write_refusal(target, *what), "protected-path"),
                        "", false};
      }
    }
    return Decision{Verdict::allow, "file-write", "sandshim: no protected file is written", "",
                    false};
  }

  DecisionInputs decision_inputs() const {
    DecisionInputs in;
    in.mode = shim::to_string(m_policy->hook_mode);
    in.can_rewrite = m_event.can_rewrite;
    in.shell_prefix_agent = m_adapter->session_shell;
    in.shell_in_sandbox =
        in.shell_prefix_agent && is_sandbox_shell_prefix(m_env.claude_shell_prefix, m_env.sandshim);
    for (const auto& [name, image] : m_policy->images) {
      in.shimmed.insert(name);
    }
    in.shim_dir = m_policy->effective_shim_dir();
    in.sandshim = m_env.sandshim;
    std::string first_entry = m_env.agent_path.substr(0, m_env.agent_path.find(':'));
    in.shim_dir_first_on_path = !first_entry.empty() && fs::path(first_entry) == in.shim_dir;
    in.command_path_has_shims = in.shim_dir_first_on_path && m_adapter->shell_shares_hook_path;
    in.routing_script = installed_routing_script(in.shim_dir);
    if (session_environment_ready(in.shim_dir)) {
      in.shim_dir_first_on_path = true;  // the session's shell has the shims: nothing to rewrite
    }
    in.shim_installed = [this, dir = in.shim_dir](const std::string& name) {
      return m_env.exists(dir / name);
    };
    in.first_line_of = [this](const std::string& command) {
      return m_env.first_line_of(command, m_event.cwd);
    };
    add_host_view(in);
    in.link = {std::string(m_adapter->audit_name), m_event.session_id, m_event.tool_use_id};
    return in;
  }

  // What the analysis may read of the host: program files, scripts, the protected paths.
  void add_host_view(DecisionInputs& in) const {
    std::error_code ec;
    in.cwd = m_event.cwd.empty() ? fs::current_path(ec) : fs::path(m_event.cwd);
    in.home = home_directory();
    in.workspace = find_git_root(in.cwd).value_or(in.cwd);
    in.protected_paths = protected_paths(*m_policy, in.workspace);
    in.variable = environment::shell_variable;
    in.python_image = python_image_of(*m_policy);
    in.image_choice = !broker_serves_runs(*m_policy);
    in.wrap_shell_writes = in.image_choice && shim::wrap_shell_writes(*m_policy);
    if (m_env.locate) {
      in.locate = [this, cwd = in.cwd](const std::string& command) {
        return m_env.locate(command, cwd);
      };
    }
    in.known_program_of = m_env.known_program_of;
    in.read_script = m_env.read_script;
    in.owned_by_system = m_env.owned_by_system;
  }

  // The agent's routing script when it holds exactly what sandshim writes for this shim
  // directory (a script left from another shim directory would route nothing); else none.
  fs::path installed_routing_script(const fs::path& shim_dir) const {
    if (!m_adapter->routing_script || !m_env.read_script) {
      return {};
    }
    fs::path script = m_adapter->routing_script();
    std::optional<std::string> text = m_env.read_script(script);
    return text && *text == routing_script_text(shim_dir) ? script : fs::path();
  }

  // Claude Code sources its session environment before every Bash command: when this session's
  // files put the shims first on PATH, commands need no rewrite.
  bool session_environment_ready(const fs::path& shim_dir) const {
    if (!m_adapter->session_shell || m_event.session_id.empty() ||
        m_event.session_id.find('/') != std::string::npos || !m_env.session_scripts) {
      return false;
    }
    std::string expected = path_line(shim_dir);
    for (const std::string& script :
         m_env.session_scripts(m_env.claude_session_env_dir / m_event.session_id)) {
      if (script.find(expected) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  // SessionStart: Claude Code hands each hook a file of shell lines it sources before every
  // Bash command. Other agents have no such file; their commands are rewritten instead.
  HookReply start_session() {
    if (!m_adapter->session_shell || m_env.claude_env_file.empty()) {
      spdlog::info("hook: {} gave no session environment file; commands get the PATH prefix",
                   m_adapter->flag);
      return m_adapter->acknowledge(m_event);
    }
    m_policy = m_env.load_policy(m_event.cwd);
    std::string script = session_environment_script(
        m_policy->effective_shim_dir(), std::string(m_adapter->audit_name), m_event.session_id);
    if (!m_env.append_text(m_env.claude_env_file, script)) {
      spdlog::warn("cannot write the session environment to {}; commands get the PATH prefix",
                   quoted(m_env.claude_env_file));
    }
    return m_adapter->acknowledge(m_event);
  }

  HookReply complete_event(const std::string& outcome) {
    try {
      m_policy = load_policy_for_audit();
      audit::DecisionCompletion completion{m_event.session_id, outcome, m_event.exit_code,
                                           m_env.now_ms(), m_event.response_tail};
      if (!m_env.complete_decision(*m_policy, m_event.tool_use_id, completion)) {
        spdlog::info("hook: no pending decision for this {} {} event", m_adapter->flag,
                     m_event.event);
      }
    } catch (const std::exception& e) {
      spdlog::warn("cannot record the outcome of a {} command: {}", m_adapter->flag, e.what());
    }
    return m_adapter->acknowledge(m_event);
  }

  // The turn is over: a decision still pending got no post-event, so the agent did not run the
  // tool (its own permission system or the user refused it; Claude Code's PermissionDenied
  // fires only for its auto-mode classifier). Closed as not-run, or ran when a run joins it.
  HookReply end_turn() {
    if (m_event.session_id.empty()) {
      spdlog::info("hook: this {} {} event names no session", m_adapter->flag, m_event.event);
      return m_adapter->acknowledge(m_event);
    }
    try {
      m_policy = load_policy_for_audit();
      size_t closed =
          m_env.close_session(*m_policy, std::string(m_adapter->audit_name), m_event.session_id);
      spdlog::info("hook: {} {} closed {} pending decision(s)", m_adapter->flag, m_event.event,
                   closed);
    } catch (const std::exception& e) {
      spdlog::warn("cannot close the {} session's pending decisions: {}", m_adapter->flag,
                   e.what());
    }
    return m_adapter->acknowledge(m_event);
  }

  // The policy whose audit gets this event's row: the workspace's, or when the workspace's own
  // file is what is refused, the user's (else the defaults), so that refusal is recorded too.
  shim::Policy load_policy_for_audit() const {
    try {
      return m_env.load_policy(m_event.cwd);
    } catch (const std::exception& e) {
      spdlog::debug("the workspace's policy is refused ({}); the user's gets the audit row",
                    e.what());
    }
    try {
      if (m_env.load_user_policy) {
        return m_env.load_user_policy();
      }
    } catch (const std::exception& e) {
      spdlog::debug("the user's policy is refused too ({}); the defaults get the audit row",
                    e.what());
    }
    return shim::Policy{};
  }

  // Refuses in the way the agent honours; after-events have nothing left to refuse.
  HookReply fail_closed(const std::string& rule, const std::string& text) {
    std::string reason = agent_message(with_rule_footer(text, rule));
    Decision decision{Verdict::deny, rule, reason, "", false};
    spdlog::warn("{}", without_prefix(reason));
    if (m_event.phase != Phase::before && m_event.phase != Phase::unsupported) {
      return m_adapter->acknowledge(m_event);
    }
    HookReply reply =
        m_adapter != nullptr ? m_adapter->refuse(m_event.event, reason) : refuse_any_agent(reason);
    record(decision, reply.sent);
    return reply;
  }

  static audit::Decision audit_decision(const Decision& decision) {
    switch (decision.verdict) {
      case Verdict::deny:
        return audit::Decision::deny;
      case Verdict::rewrite:
        return audit::Decision::rewrite;
      case Verdict::allow:
        break;
    }
    return audit::Decision::allow;
  }

  // One audit record per decision; false when it could not be written.
  bool record(const Decision& decision, const std::string& sent) {
    try {
      if (!m_policy) {
        m_policy = load_policy_for_audit();
      }
      audit::DecisionRecord row = decision_record(decision);
      row.answer = sent;
      m_env.record_decision(*m_policy, row);
      return true;
    } catch (const std::exception& e) {
      m_record_error = e.what();
      if (!m_env.audit_required) {  // else the refusal says it, once
        spdlog::warn("cannot record the hook decision: {}", e.what());
      }
      return false;
    }
  }

  audit::DecisionRecord decision_record(const Decision& decision) const {
    audit::DecisionRecord record;
    record.time_ms = m_env.now_ms();
    record.agent = m_adapter != nullptr ? std::string(m_adapter->audit_name) : "unknown";
    record.event = m_event.event;
    record.session_id = m_event.session_id;
    record.tool_use_id = m_event.tool_use_id;
    record.cwd = m_event.cwd;
    record.original_command =
        m_event.file_tool ? "write " + join(m_event.written_paths, " ") : m_event.command;
    record.rewritten_command = decision.rewritten_command;
    record.decision = audit_decision(decision);
    record.permission_mode = m_event.permission_mode;
    record.reason = decision.reason;
    record.rule = decision.rule;
    record.payload_bytes = m_payload_bytes;
    return record;
  }

  const HookOptions& m_options;
  const HookEnvironment& m_env;
  Agent m_adapter = nullptr;
  HookEvent m_event;
  std::optional<shim::Policy> m_policy;
  int64_t m_payload_bytes = 0;
  std::string m_record_error;  // why the last audit write failed
};

// A broker's worker writes the broker's keyed, anchored chain; direct mode the plain one.
audit::Store open_store(const shim::Policy& policy) {
  return audit::Store::open(shim::audit_store_options(policy, policy.effective_audit_db(),
                                                      shim::broker_policy_source().has_value()));
}

// The file bash would run for `command`: a path (relative to the command's cwd) or the first
// match on PATH.
std::optional<fs::path> program_file(const std::string& command, const fs::path& cwd,
                                     const std::string& path_variable) {
  if (command.starts_with("~/")) {
    return home_directory() / command.substr(2);
  }
  if (command.find('/') != std::string::npos) {
    return command.starts_with('/') || cwd.empty() ? fs::path(command) : cwd / command;
  }
  return find_in_path(command, path_variable, nullptr);
}

std::optional<std::string> read_first_line(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return std::nullopt;
  }
  std::ifstream in(file, std::ios::binary);
  std::string line(256, '\0');
  in.read(line.data(), static_cast<std::streamsize>(line.size()));
  line.resize(static_cast<size_t>(in.gcount()));
  return first_line_of(line);
}

bool append_to_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::app | std::ios::binary);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// The files Claude Code writes for a session's SessionStart hooks (sessionstart-hook-N.sh).
std::vector<std::string> session_start_scripts(const fs::path& dir) {
  std::vector<std::string> scripts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("sessionstart-hook-") && name.ends_with(".sh")) {
      std::ifstream in(entry.path(), std::ios::binary);
      scripts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return scripts;
}

// One write to the audit, then the WAL's fold once this hook has exited (when it has grown
// large): the store is closed first, so no SQLite state crosses the fold's fork.
template <typename Write>
auto write_then_fold(const shim::Policy& policy, const Write& write) {
  return shim::write_then_fold([&] { return open_store(policy); }, write);
}

// The audit writes of a decision, its completion and a session's end, each as its caller.
void add_audit_writers(HookEnvironment& env) {
  env.record_decision = [](const shim::Policy& policy, const audit::DecisionRecord& record) {
    audit::DecisionRecord mine = record;
    mine.uid = mine.uid.value_or(shim::identify_caller({}).uid);  // a broker's peer, not getuid
    return write_then_fold(policy,
                           [&](audit::Store& store) { return store.record_decision(mine); });
  };
  env.complete_decision = [](const shim::Policy& policy, const std::string& tool_use_id,
                             const audit::DecisionCompletion& completion) {
    return write_then_fold(policy, [&](audit::Store& store) {
      return store.complete_decision(tool_use_id, completion, shim::identify_caller({}).uid);
    });
  };
  env.close_session = [](const shim::Policy& policy, const std::string& agent,
                         const std::string& session_id) {
    return write_then_fold(policy, [&](audit::Store& store) {
      return store.close_session_decisions(agent, session_id, shim::identify_caller({}).uid);
    });
  };
}

// How a command name is found on the agent's PATH, its first line read and its program known;
// needs env.agent_path and env.sandshim set.
void add_program_lookups(HookEnvironment& env) {
  env.first_line_of = [path_variable = env.agent_path](const std::string& command,
                                                       const fs::path& cwd) {
    std::optional<fs::path> file = program_file(command, cwd, path_variable);
    return file ? read_first_line(*file) : std::nullopt;
  };
  env.locate = [path_variable = env.agent_path](const std::string& command, const fs::path& cwd) {
    return locate_program(command, cwd, path_variable);
  };
  // Built on first use: most commands never ask.
  env.known_program_of = [known = std::make_shared<std::optional<KnownPrograms>>(),
                          path_variable = env.agent_path,
                          sandshim = env.sandshim](const fs::path& file) {
    if (!*known) {
      known->emplace(path_variable, sandshim);
    }
    return (*known)->of(file);
  };
}

}  // namespace

HookReply run_hook(const HookOptions& options, std::string_view payload,
                   const HookEnvironment& environment) {
  return HookRun(options, environment).answer(payload);
}

HookEnvironment system_environment() {
  HookEnvironment env;
  env.load_policy = [](const fs::path& cwd) {
    return shim::load_policy(shim::policy_inputs(shim::broker_policy_source(), workspace_of(cwd)));
  };
  env.load_user_policy = [] {
    return shim::load_policy(shim::policy_inputs(shim::broker_policy_source(), {}));
  };
  add_audit_writers(env);
  env.sandshim = self_executable();
  env.agent_path = environment::path();
  env.claude_shell_prefix = environment::text("CLAUDE_CODE_SHELL_PREFIX").value_or("");
  add_program_lookups(env);
  env.read_script = read_script_file;
  env.owned_by_system = [](const fs::path& file) { return owned_by_system(file); };
  env.exists = [](const fs::path& file) {
    std::error_code ec;
    return fs::exists(file, ec);
  };
  env.now_ms = wall_clock_ms;
  env.claude_env_file = environment::text("CLAUDE_ENV_FILE").value_or("");
  for (Agent agent : all_agents()) {
    if (agent->session_shell) {
      env.claude_session_env_dir = agent->config_dir() / "session-env";
    }
  }
  env.append_text = append_to_file;
  env.session_scripts = session_start_scripts;
  return env;
}

std::string agent_message(std::string_view text) {
  std::string message;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string line = trim(without_prefix(trim(text.substr(start, end - start))));
    while (!line.empty() && (line.back() == '.' || line.back() == ' ')) {
      line.pop_back();
    }
    if (!line.empty()) {
      message += (message.empty() ? "" : "\n") + std::string(k_prefix) + line;
    }
    start = end + 1;
  }
  return message;
}

std::string session_environment_script(const fs::path& shim_dir, const std::string& agent,
                                       const std::string& session_id) {
  return "# sandshim: python, node and sh reached by name run in its sandbox\n" +
         path_line(shim_dir) + "\nexport SANDSHIM_AGENT=" + shell_quote(agent) +
         " SANDSHIM_SESSION_ID=" + shell_quote(session_id) + "\n";
}

}  // namespace sandshim::hooks
