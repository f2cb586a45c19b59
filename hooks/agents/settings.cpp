#include "hooks/agents/settings.hpp"

namespace sandshim::hooks::settings {

Json group(const std::string& matcher, Json handler) {
  Json result = Json::object();
  if (!matcher.empty()) {
    result["matcher"] = matcher;
  }
  result["hooks"] = Json::array({std::move(handler)});
  return result;
}

Json command_handler(int timeout, Json extras) {
  Json handler{{"type", "command"}, {"command", ""}, {"timeout", timeout}};
  handler.update(extras);
  return handler;
}

// Claude Code runs `command` with `args` directly, never through CLAUDE_CODE_SHELL_PREFIX, so
// the hook stays on the host when the agent's shell is the sandbox.
Json exec_form(Json handler) {
  handler["command"] = "/bin/sh";
  handler["args"] = Json::array({"-c", ""});
  return handler;
}

}  // namespace sandshim::hooks::settings
