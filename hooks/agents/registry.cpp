#include <array>

#include "hooks/agents/adapters.hpp"
#include "hooks/agents/agent.hpp"

namespace sandshim::hooks {

namespace {

const std::array<const AgentAdapter*, 5>& adapters() {
  static const std::array<const AgentAdapter*, 5> table = {&claude_adapter(), &codex_adapter(),
                                                           &cursor_adapter(), &gemini_adapter(),
                                                           &windsurf_adapter()};
  return table;
}

bool has(const nlohmann::ordered_json& payload, const char* key) {
  return payload.is_object() && payload.contains(key);
}

}  // namespace

const AgentAdapter& adapter_for(Agent agent) {
  for (const AgentAdapter* adapter : adapters()) {
    if (adapter->agent == agent) {
      return *adapter;
    }
  }
  return claude_adapter();
}

std::optional<Agent> agent_named(std::string_view flag) {
  for (const AgentAdapter* adapter : adapters()) {
    if (adapter->flag == flag) {
      return adapter->agent;
    }
  }
  return std::nullopt;
}

// Cursor and Gemini both set CLAUDE_PROJECT_DIR and Cursor runs Claude Code's hooks, so only
// the payload says who is calling.
std::optional<Agent> detect_agent(const nlohmann::ordered_json& payload) {
  if (has(payload, "agent_action_name")) {
    return Agent::windsurf;
  }
  if (has(payload, "cursor_version") || has(payload, "conversation_id")) {
    return Agent::cursor;
  }
  auto event = payload.is_object() ? payload.value("hook_event_name", nlohmann::ordered_json())
                                   : nlohmann::ordered_json();
  if (!event.is_string()) {
    return std::nullopt;
  }
  std::string name = event.get<std::string>();
  if (name == "BeforeTool" || name == "AfterTool") {
    return Agent::gemini;
  }
  if (name == "PreToolUse" || name == "PostToolUse" || name == "PostToolUseFailure") {
    return has(payload, "turn_id") && has(payload, "model") ? Agent::codex : Agent::claude;
  }
  return std::nullopt;
}

HookReply refuse_any_agent(const std::string& reason) {
  return {"", reason + "\n", 2, "exit 2"};
}

}  // namespace sandshim::hooks
