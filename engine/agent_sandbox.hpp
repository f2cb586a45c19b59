#pragma once

// What to tell the user when the engine socket is refused: an agent's own sandbox (Codex's
// seccomp filter, Claude Code's sandbox) refuses it with EPERM, and no group membership helps;
// root never needs `usermod`.

#include <string>

namespace sandshim::shim {

// The fix for an engine error mentioning "operation not permitted" or "permission denied";
// `agent` is SANDSHIM_AGENT (codex, claude-code…), `engine_hint` the engine's own suggestion.
std::string engine_socket_refused_fix(const std::string& engine_error, const std::string& agent,
                                      bool is_root, const std::string& engine_hint);

}  // namespace sandshim::shim
