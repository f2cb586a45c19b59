#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/decision_record.hpp"
#include "hooks/agents/agent.hpp"
#include "policy/policy.hpp"

namespace sandshim::hooks {

// Larger payloads are refused unread: no agent sends a megabyte for one shell command.
inline constexpr size_t k_max_payload_bytes = 1 << 20;

// Past this, the hook refuses on its own (exit 2) instead of letting the agent's timeout, which
// some agents treat as "no objection", decide. The installed timeouts are well above it.
inline constexpr int k_hook_deadline_seconds = 20;

struct HookOptions {
  std::optional<Agent> agent;  // --agent; absent: detected from the payload
  std::string expected_event;  // --event; a payload naming another event is refused
};

// Everything a hook run reads or writes outside its payload, so tests can stub it.
struct HookEnvironment {
  std::function<shim::Policy(const std::filesystem::path& cwd)> load_policy;
  // The policy without the workspace's layer: where the audit row of a refusal goes when the
  // workspace's own .sandshim.conf is what is refused. Empty: the defaults.
  std::function<shim::Policy()> load_user_policy;
  std::function<std::string(const shim::Policy&, const audit::DecisionRecord&)> record_decision;
  std::function<bool(const shim::Policy&, const std::string& tool_use_id,
                     const audit::DecisionCompletion&)>
      complete_decision;
  // The agent's session (or turn) is over: closes the caller's own decisions of (agent's audit
  // name, session id) still pending and returns how many (a broker's `session_close`, or the
  // local audit's same function in direct mode).
  std::function<size_t(const shim::Policy&, const std::string& agent,
                       const std::string& session_id)>
      close_session;
  // Set when the decisions go to a required broker: a decision it cannot record is refused, with
  // the reason the write failed (a direct-mode store refuses only under audit.required).
  bool audit_required = false;
  std::filesystem::path sandshim;  // this binary, canonical
  std::string agent_path;          // PATH the agent started the hook with
  // CLAUDE_CODE_SHELL_PREFIX the agent started the hook with: Claude Code runs its Bash
  // commands through the same value (rewrite.hpp, sandbox_shell_prefix).
  std::string claude_shell_prefix;
  // The first line of the file a command word runs, looked up as the agent's shell would.
  std::function<std::optional<std::string>(const std::string& command,
                                           const std::filesystem::path& cwd)>
      first_line_of;
  // The file bash would run for a command word (canonical), which known program a file is, and
  // the text of a script: what the analysis may read of the host (empty: nothing is read).
  std::function<std::optional<std::filesystem::path>(const std::string& command,
                                                     const std::filesystem::path& cwd)>
      locate;
  std::function<std::optional<std::string>(const std::filesystem::path& file)> known_program_of;
  std::function<std::optional<std::string>(const std::filesystem::path& file)> read_script;
  // Only root can have written the file (owned_by_system); empty: no file is the system's.
  std::function<bool(const std::filesystem::path& file)> owned_by_system;
  std::function<bool(const std::filesystem::path&)> exists;
  std::function<int64_t()> now_ms;
  // Claude Code's session environment: the file a SessionStart hook appends to
  // ($CLAUDE_ENV_FILE), and the folder holding every session's files (<config>/session-env).
  std::string claude_env_file;
  std::filesystem::path claude_session_env_dir;
  std::function<bool(const std::filesystem::path&, const std::string&)> append_text;
  std::function<std::vector<std::string>(const std::filesystem::path& dir)> session_scripts;
};

// A reason as the agent shows it: one line per fact, each with exactly one `sandshim:` prefix
// and no final period (agents append their own text, which made "..").
std::string agent_message(std::string_view text);

// The lines a session environment gets: the shim directory first on PATH, and who is calling
// so the shims can join their runs to the session.
std::string session_environment_script(const std::filesystem::path& shim_dir,
                                       const std::string& agent, const std::string& session_id);

// Answers one hook payload: parse it as the agent's event, decide (or complete an earlier
// decision), record it, and reply in the agent's format. Never throws; whatever goes wrong
// before a decision is answered as a refusal the agent honours.
HookReply run_hook(const HookOptions& options, std::string_view payload,
                   const HookEnvironment& environment);

// The real environment: policy files, the audit database, /proc/self/exe, PATH, the clock.
HookEnvironment system_environment();

}  // namespace sandshim::hooks
