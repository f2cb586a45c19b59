#pragma once

#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::cli {

// The completion script for `shell` (bash, zsh or fish), generated from the same docs as
// --help, so a new option completes as soon as it exists. Throws Fatal for another shell.
std::string completion_script(const std::string& shell, const std::vector<CommandDoc>& docs);

// The sandshim(1) man page (groff -man), from the same docs.
std::string man_page(const std::vector<CommandDoc>& docs, const std::string& version);

// The default /etc/sandshim/config: every key of the policy's table with its help and its
// built-in default, all commented out, so installing it changes nothing.
std::string config_template();

}  // namespace sandshim::cli
