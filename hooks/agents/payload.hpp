#pragma once

// Reading agent payloads and writing answers: the pieces every adapter shares.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "hooks/agents/agent.hpp"

namespace sandshim::hooks::payload {

using Json = nlohmann::ordered_json;

// A string field; empty when absent or null. PayloadError when it holds another type.
std::string text(const Json& object, std::string_view key);
// A string field that must be present and non-empty.
std::string required_text(const Json& object, std::string_view key);
// A shell tool's `command`: required before the tool runs, as given (maybe empty) after it.
std::string shell_command(const Json& tool_input, bool before);
// A boolean field; false when absent or not a boolean.
bool flag(const Json& object, std::string_view key);
// An object field; an empty object when absent. PayloadError when it holds another type.
Json object(const Json& object, std::string_view key);

// An id for agents that send none: equal for the before- and after-event of one command.
std::string derived_id(std::initializer_list<std::string_view> parts);

// The last `bytes` of a tool's output, for the audit.
std::string tail(std::string_view text, size_t bytes = 4096);

// "Exit code 3\n…" -> 3: the number after `marker`, when there is one.
std::optional<int> number_after(std::string_view text, std::string_view marker);

// Serialises one answer: compact, one line, invalid UTF-8 replaced so it never throws.
std::string dump(const Json& answer);

// The tool's input with the command replaced, every other field echoed as the agent sent it.
Json with_command(const Json& tool_input, std::string_view key, const std::string& command);

// `{}`: no decision (after-events, tools sandshim has no opinion on).
HookReply no_opinion();

// Claude Code's and Codex's PreToolUse answer.
Json pre_tool_use_answer(const std::string& decision, const std::string& reason);

}  // namespace sandshim::hooks::payload
