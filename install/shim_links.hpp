#pragma once

#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::install {

// `sandshim install [--dir DIR]`: one symlink per shimmed command, pointing at this binary.
int install_shims_main(const std::vector<std::string>& args);
// `sandshim uninstall [--dir DIR]`: removes exactly the links install created.
int uninstall_shims_main(const std::vector<std::string>& args);
// `sandshim env [--shell bash|zsh|fish]`: the line that puts the shim directory first on PATH.
int env_main(const std::vector<std::string>& args);

// Their documentation, for --help, the completions and the man page.
CommandDoc install_shims_doc();
CommandDoc uninstall_shims_doc();
CommandDoc env_doc();

}  // namespace sandshim::install
