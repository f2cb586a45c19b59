#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hooks/agents/settings.hpp"
#include "hooks/decide.hpp"
#include "hooks/protected_paths.hpp"

namespace sandshim::hooks {

// An agent is its descriptor: one per agent, defined in hooks/agents/<agent>.cpp and listed once
// in hooks/agents/registry.cpp.
struct AgentDescriptor;
using Agent = const AgentDescriptor*;

enum class Phase {
  before,         // the tool is about to run: decide
  after,          // it ran: complete the decision
  after_failure,  // it ran and failed: complete the decision
  not_run,        // the agent refused it after sandshim had no objection: close the decision
  session_start,  // a session begins: put the shims first on its PATH where the agent can
  turn_end,       // the agent's turn is over: close the decisions no post-event completed
  unsupported,    // an event sandshim does not handle: refused
};

// One hook event, whatever agent sent it.
struct HookEvent {
  Agent agent = nullptr;
  std::string event;  // as the agent names it: PreToolUse, beforeShellExecution, pre_run_command
  Phase phase = Phase::unsupported;
  std::string tool_name;
  bool shell_tool = false;  // the tool runs a shell command (Bash, Shell, run_shell_command…)
  bool file_tool = false;   // the tool writes files (Write, Edit, apply_patch, write_file…)
  std::vector<std::string> written_paths;  // file tools: every file it would write, as sent
  bool can_rewrite = false;                // the agent applies a rewritten command for this event
  std::string command;
  std::string cwd;
  std::string session_id;
  std::string tool_use_id;      // the agent's, or derived from session and command
  std::string permission_mode;  // the agent's approval mode (default, acceptEdits, plan…)
  nlohmann::ordered_json tool_input = nlohmann::ordered_json::object();  // echoed in a rewrite
  std::optional<int> exit_code;  // after the tool ran, when the agent reports one
  std::string response_tail;     // after: the end of what the tool reported
};

// What goes back to the agent: stdout holds one JSON object or nothing, never anything else.
struct HookReply {
  std::string out;
  std::string err;
  int exit_code = 0;
  std::string sent;  // for the audit: what the agent was told (nothing, deny, updatedInput…)
};

// The payload is not the event the agent documents.
class PayloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A payload that names its agent (Cursor's cursor_version): it is that agent's whatever
// `--agent` says, as when Cursor runs Claude Code's hooks with its own payloads.
inline constexpr int k_unmistakable = 100;

// Everything sandshim knows of one agent: the rest of the code iterates the registry.
struct AgentDescriptor {
  std::string_view flag;        // `--agent` value: claude, codex, cursor, gemini, windsurf
  std::string_view audit_name;  // the audit's name: claude-code, codex, cursor, gemini-cli…
  std::string_view display;     // Claude Code, Codex, Cursor, Gemini CLI, Windsurf
  // `sandshim hook --help`: the events it handles; `sandshim install agent --help`: its row.
  std::string_view hook_help;
  std::string_view install_help;
  // Variables the agent sets in the processes it starts: a run under one is this agent's.
  std::vector<std::string> session_markers;
  // How surely the payload is this agent's (0: not at all); without `--agent` the highest wins,
  // and k_unmistakable wins over `--agent` too.
  int (*recognise)(const nlohmann::ordered_json& payload);
  // Throws PayloadError when a required field is missing or of the wrong type.
  HookEvent (*parse)(const nlohmann::ordered_json& payload);
  HookReply (*answer)(const HookEvent& event, const Decision& decision);
  // Blocks the tool call in the way this agent honours (fail closed).
  HookReply (*refuse)(const std::string& event, const std::string& reason);
  // The answer to an after-event: nothing to decide.
  HookReply (*acknowledge)(const HookEvent& event);
  // Its own directory for the user (CLAUDE_CONFIG_DIR or ~/.claude, CODEX_HOME or ~/.codex…).
  std::filesystem::path (*config_dir)();
  // Where its settings live and what `sandshim install agent` writes there.
  AgentSettings (*settings)(InstallMode mode);
  // Its files no agent command may write: in the user's home and system-wide, and in any project.
  std::vector<ProtectedPlace> (*user_places)();
  std::vector<ProtectedName> (*project_places)();
  // Workspace entries that stay read-only inside the sandbox (policy's writable paths).
  std::vector<std::string> workspace_names;
  // Its shell sources a session environment file and can run through a shell prefix (Claude
  // Code's CLAUDE_ENV_FILE and CLAUDE_CODE_SHELL_PREFIX; hook_run.cpp).
  bool session_shell = false;
  // Its shell commands run in the environment its hooks run in (Gemini CLI: both `bash -c`,
  // BASH_ENV read by both): shims first on the hook's PATH are first on the command's.
  bool shell_shares_hook_path = false;
  // It judges its own rules on the rewritten command (Codex): the file a routed command sources
  // instead of the `export PATH=…;` prefix, which no rule of the user's would match
  // (rewrite.hpp, route_through_script); null: the prefix.
  std::filesystem::path (*routing_script)() = nullptr;
};

// Every agent, in the registry's order.
const std::vector<Agent>& all_agents();

// The agent a `--agent` value names.
std::optional<Agent> agent_named(std::string_view flag);

// The flags joined: "claude, codex, cursor, gemini" + `last` + "windsurf".
std::string agent_flags(std::string_view last = ", ");

// Guesses the agent from the payload's shape, for hooks installed without `--agent`.
std::optional<Agent> detect_agent(const nlohmann::ordered_json& payload);

// A refusal every agent treats as a block (exit 2, reason on stderr, stdout empty): for
// payloads whose agent is unknown.
HookReply refuse_any_agent(const std::string& reason);

// Gives the layers below hooks/ (run/, policy/) what they know of the agents
// (policy/known_agents.hpp): the program calls it once at start-up.
void publish_known_agents();

}  // namespace sandshim::hooks
