#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandshim::audit {

// What a hook answered the agent. Stored as the lowercase names below.
enum class Decision {
  allow,    // sandshim has no objection: the agent's own approval decides
  deny,     // the command does not run; final when recorded
  ask,      // the agent asks its user (written by older versions only)
  rewrite,  // the command runs rewritten (through the shim), if the agent approves it
};

std::string to_string(Decision decision);
std::optional<Decision> decision_from_string(const std::string& text);
std::vector<std::string> decision_names();

// The outcome a PostToolUse (or AfterTool) hook reports for an earlier decision.
struct DecisionCompletion {
  std::string session_id;        // narrows the match when tool_use_id repeats across sessions
  std::string outcome = "ran";   // ran | not-run (the agent refused it, or `sandshim gc` closed it)
  std::optional<int> exit_code;  // when the agent reports none, the joined run's is used
  int64_t completed_ms = 0;
  std::string tool_response_tail;  // bounded by the hook, bytes as received
};

// One hook decision: what the agent asked to run and what sandshim answered.
struct DecisionRecord {
  std::string decision_id;  // empty: the store makes one
  int64_t time_ms = 0;
  std::string agent;  // its descriptor's audit_name (claude-code, codex…), or unknown
  std::string event;  // the hook event as the agent names it: PreToolUse, BeforeTool, ...
  std::string session_id;
  std::string tool_use_id;  // links the decision to its runs (runs.tool_use_id) and completion
  std::string cwd;
  std::string original_command;
  std::string rewritten_command;  // empty unless decision == rewrite
  Decision decision = Decision::allow;
  std::string answer;           // what the agent was sent: nothing, deny, updatedInput, exit 2…
  std::string permission_mode;  // the agent's approval mode at the time (default, plan…)
  std::string reason;           // shown to the agent or the user
  std::string rule;             // the policy rule that decided
  int64_t payload_bytes = 0;
  std::optional<DecisionCompletion> completion;  // set when the outcome is already known
  std::optional<uint32_t> uid;  // the caller (the broker sets it); empty: this process's uid

  // A decision is sealed into the chain once nothing more will be learned about it.
  bool is_final() const { return decision == Decision::deny || completion.has_value(); }
};

}  // namespace sandshim::audit
