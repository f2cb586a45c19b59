#pragma once

// Claude Code's hook protocol, which Codex CLI shares (PreToolUse/PostToolUse…): the reading and
// answering both adapters use (hooks/agents/claude.cpp, codex.cpp).

#include "hooks/agents/agent.hpp"

namespace sandshim::hooks::claude_shape {

// One event; `read_file_tool` finds the files a file tool writes, `can_rewrite`: the agent
// applies updatedInput.
HookEvent parse(const nlohmann::ordered_json& body, Agent agent, bool can_rewrite,
                void (*read_file_tool)(HookEvent& event));

// 1 when the payload's hook_event_name is PreToolUse, PostToolUse or PostToolUseFailure.
int recognise_tool_event(const nlohmann::ordered_json& payload);

HookReply nothing();
HookReply deny(const std::string& reason);
// Exit 2 with the reason on stderr; stdout repeats it as a schema-valid deny for PreToolUse.
HookReply refuse(const std::string& event, const std::string& reason);
HookReply acknowledge(const HookEvent& event);

}  // namespace sandshim::hooks::claude_shape
