#pragma once

// What the layers below hooks/ know of the coding agents. The agents' descriptors live in
// hooks/agents/, which run/ and policy/ cannot include: the program hands this list down once at
// start-up (hooks::publish_known_agents), before any run or policy is read.

#include <string>
#include <vector>

namespace sandshim::shim {

struct KnownAgent {
  std::string audit_name;                    // claude-code, codex, cursor, gemini-cli…
  std::vector<std::string> session_markers;  // variables it sets in the processes it starts
  std::vector<std::string> workspace_names;  // workspace entries that stay read-only
};

void set_known_agents(std::vector<KnownAgent> agents);
// Empty until set_known_agents.
const std::vector<KnownAgent>& known_agents();

}  // namespace sandshim::shim
