// The registry: one line per agent. Each agent's descriptor is defined in its own file,
// hooks/agents/<agent>.cpp, as `const AgentDescriptor& <agent>_agent()`.

#include "hooks/agents/agent.hpp"
#include "policy/known_agents.hpp"

#define SANDSHIM_AGENTS(X) \
  X(claude)                \
  X(codex)                 \
  X(cursor)                \
  X(gemini)                \
  X(windsurf)              \
  /* one line per agent, above */

namespace sandshim::hooks {

#define SANDSHIM_DECLARE_AGENT(name) const AgentDescriptor& name##_agent();
SANDSHIM_AGENTS(SANDSHIM_DECLARE_AGENT)
#undef SANDSHIM_DECLARE_AGENT

const std::vector<Agent>& all_agents() {
#define SANDSHIM_LIST_AGENT(name) &name##_agent(),
  static const std::vector<Agent> agents = {SANDSHIM_AGENTS(SANDSHIM_LIST_AGENT)};
#undef SANDSHIM_LIST_AGENT
  return agents;
}

std::optional<Agent> agent_named(std::string_view flag) {
  for (Agent agent : all_agents()) {
    if (agent->flag == flag) {
      return agent;
    }
  }
  return std::nullopt;
}

std::string agent_flags(std::string_view last) {
  std::string joined;
  const std::vector<Agent>& agents = all_agents();
  for (size_t i = 0; i < agents.size(); ++i) {
    joined += i == 0 ? "" : i + 1 == agents.size() ? std::string(last) : ", ";
    joined += agents[i]->flag;
  }
  return joined;
}

// Cursor and Gemini both set CLAUDE_PROJECT_DIR and Cursor runs Claude Code's hooks, so only
// the payload says who is calling: the agent whose shape it matches most surely.
std::optional<Agent> detect_agent(const nlohmann::ordered_json& payload) {
  std::optional<Agent> best;
  int best_score = 0;
  for (Agent agent : all_agents()) {
    int score = agent->recognise(payload);
    if (score > best_score) {
      best = agent;
      best_score = score;
    }
  }
  return best;
}

HookReply refuse_any_agent(const std::string& reason) {
  return {"", reason + "\n", 2, "exit 2"};
}

void publish_known_agents() {
  std::vector<shim::KnownAgent> known;
  for (Agent agent : all_agents()) {
    known.push_back(
        {std::string(agent->audit_name), agent->session_markers, agent->workspace_names});
  }
  shim::set_known_agents(std::move(known));
}

}  // namespace sandshim::hooks
