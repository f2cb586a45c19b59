#include "engine/agent_sandbox.hpp"

#include <algorithm>
#include <cctype>

namespace sandshim::shim {

namespace {

bool contains_lowercase(std::string text, const std::string& needle) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find(needle) != std::string::npos;
}

std::string agent_sandbox_fix(const std::string& agent) {
  if (agent == "codex") {
    return "Codex's sandbox (its seccomp filter) refuses the engine socket: allow it with "
           "`[sandbox_workspace_write] network_access = true` in ~/.codex/config.toml, or start "
           "Codex with `-c sandbox_workspace_write.network_access=true`";
  }
  if (agent == "claude-code") {
    return "Claude Code's sandbox refuses the engine socket: turn it off for this project "
           "(\"sandbox\": {\"enabled\": false} in .claude/settings.json)";
  }
  return "a sandbox around the calling process refuses the engine socket (EPERM): let it reach "
         "the socket, or run the command outside that sandbox";
}

}  // namespace

std::string engine_socket_refused_fix(const std::string& engine_error, const std::string& agent,
                                      bool is_root, const std::string& engine_hint) {
  if (contains_lowercase(engine_error, "operation not permitted")) {
    return agent_sandbox_fix(agent);
  }
  if (is_root) {
    return "root may not use the engine socket, so something around this process refuses it: " +
           agent_sandbox_fix(agent);
  }
  return engine_hint;
}

}  // namespace sandshim::shim
