#pragma once

#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::install {

// `sandshim install agent NAME [--project DIR | --user] [--uninstall] [--dry-run]`: merges
// sandshim's hook entries into the agent's own settings and installs the sandshim skill.
int install_agent_main(const std::vector<std::string>& args);
// Its documentation, for --help, the completions and the man page.
CommandDoc install_agent_doc();

}  // namespace sandshim::install
