#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::install {

// `sandshim install git-hooks [--repo DIR] [--uninstall] [--dry-run]`: points core.hooksPath at a
// dispatcher that runs the repository's own hooks inside the sandbox; uninstall restores the old
// setting.
int install_git_hooks_main(const std::vector<std::string>& args);
// Its documentation, for --help, the completions and the man page.
CommandDoc git_hooks_doc();

struct GitHooksOptions {
  std::filesystem::path repo;      // any directory inside the repository
  std::filesystem::path sandshim;  // the binary the dispatcher runs hooks with
  bool uninstall = false;
  bool dry_run = false;
};

// Installs (or removes) the dispatcher: one script per git hook name in
// <git-common-dir>/sandshim-hooks, each running `sandshim run -- <previous hooks dir>/<name>`
// when that hook exists. The previous local core.hooksPath (or its absence) is saved next to
// them, so uninstall puts back exactly what was there. Reports to `out`.
void install_git_hooks(const GitHooksOptions& options, std::ostream& out);

// The hook names git runs (githooks(5)).
const std::vector<std::string>& git_hook_names();

}  // namespace sandshim::install
