#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shim/policy.hpp"

namespace sandshim::shim {

// One request to run a command in the sandbox, from shim mode or `sandshim run`.
struct Invocation {
  std::string invoked_as;            // the shim name (python, node, sh) or "run"
  std::vector<std::string> command;  // the container's argv; command[0] picks the image
  std::vector<Setting> overrides;    // `sandshim run` flags, applied over every config layer
  bool dry_run = false;              // print the engine command line, run nothing
};

// The whole run: policy, checks, audit row, container, outcome. Returns the exit code to
// return to the caller; never runs anything on the host.
int run_sandboxed(const Invocation& invocation);

// `sandshim pool fill COMMAND`: starts warm containers for COMMAND's image in this workspace
// under the configured policy until pool.size wait idle; returns once they run.
int fill_pool(const Invocation& invocation);

}  // namespace sandshim::shim
