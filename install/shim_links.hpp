#pragma once

#include <string>
#include <vector>

namespace sandshim::install {

// `sandshim install [--dir DIR]`: one symlink per shimmed command, pointing at this binary.
int install_shims_main(const std::vector<std::string>& args);
// `sandshim uninstall [--dir DIR]`: removes exactly the links install created.
int uninstall_shims_main(const std::vector<std::string>& args);
// `sandshim env [--shell bash|zsh|fish]`: the line that puts the shim directory first on PATH.
int env_main(const std::vector<std::string>& args);

}  // namespace sandshim::install
