#pragma once

#include <string>
#include <vector>

namespace sandshim::install {

// `sandshim install agent NAME [--project DIR | --user] [--uninstall] [--dry-run]`: merges
// sandshim's hook entries into the agent's own settings and installs the sandshim skill.
int install_agent_main(const std::vector<std::string>& args);

}  // namespace sandshim::install
