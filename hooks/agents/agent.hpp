#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hooks/decide.hpp"

namespace sandshim::hooks {

enum class Agent { claude, codex, cursor, gemini, windsurf };

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
  Agent agent = Agent::claude;
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

// One agent's protocol: how to read its events and how to answer them.
struct AgentAdapter {
  Agent agent;
  std::string_view flag;        // `--agent` value: claude, codex, cursor, gemini, windsurf
  std::string_view audit_name;  // the audit's name: claude-code, codex, cursor, gemini-cli…
  // Throws PayloadError when a required field is missing or of the wrong type.
  HookEvent (*parse)(const nlohmann::ordered_json& payload);
  HookReply (*answer)(const HookEvent& event, const Decision& decision);
  // Blocks the tool call in the way this agent honours (fail closed).
  HookReply (*refuse)(const std::string& event, const std::string& reason);
  // The answer to an after-event: nothing to decide.
  HookReply (*acknowledge)(const HookEvent& event);
};

const AgentAdapter& adapter_for(Agent agent);

// The agent a `--agent` value names.
std::optional<Agent> agent_named(std::string_view flag);

// Guesses the agent from the payload's shape, for hooks installed without `--agent`.
std::optional<Agent> detect_agent(const nlohmann::ordered_json& payload);

// A refusal every agent treats as a block (exit 2, reason on stderr, stdout empty): for
// payloads whose agent is unknown.
HookReply refuse_any_agent(const std::string& reason);

}  // namespace sandshim::hooks
