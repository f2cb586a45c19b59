#pragma once

#include <string>
#include <vector>

#include "install/agent_settings.hpp"
#include "install/doctor_findings.hpp"

namespace sandshim::install {

// What doctor's `sandbox` line weighs besides Claude Code's settings.
struct SandboxFacts {
  bool broker = false;                   // the shims use the broker (or must: required)
  std::string broker_socket;             // its path
  std::vector<std::string> engine_ways;  // how this uid still reaches the engine (docker group…)
  bool root = false;
  std::string user;  // this uid's name, for the fix
};

// Claude Code's own sandbox, when on, refuses every unix socket its commands open unless
// sandbox.network.allowAllUnixSockets (Linux allows none by path): the broker's too. The line
// that says whether sandshim's shims still work under it, and what that setting opens.
Finding claude_sandbox_finding(const ClaudeSandbox& sandbox, const SandboxFacts& facts);

}  // namespace sandshim::install
