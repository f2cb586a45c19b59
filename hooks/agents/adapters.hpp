#pragma once

// The adapter of each agent, one file each; agents/registry.cpp puts them in one table.

#include "hooks/agents/agent.hpp"

namespace sandshim::hooks {

const AgentAdapter& claude_adapter();
const AgentAdapter& codex_adapter();
const AgentAdapter& cursor_adapter();
const AgentAdapter& gemini_adapter();
const AgentAdapter& windsurf_adapter();

}  // namespace sandshim::hooks
