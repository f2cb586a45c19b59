#pragma once

#include <filesystem>
#include <vector>

#include "shim/policy.hpp"

namespace sandshim::hooks {

// The places an agent command may not write, because the sandbox depends on them: sandshim's
// config and state (audit database included), the shim directory, the agent's settings and
// hook files, and in any directory `.sandshim.conf`, `.git/hooks` and `.git/config`.
struct ProtectedPaths {
  std::vector<std::filesystem::path> roots;  // absolute, lexically normal
};

// True when writing, removing or moving `path` (absolute) could change what the sandbox relies
// on: it lies inside a protected root, is an ancestor of one, or is a protected name anywhere.
bool is_protected_path(const ProtectedPaths& protected_paths, const std::filesystem::path& path);

// The protected roots for a policy: its config and state directories, audit database, shim
// directory, /etc/sandshim and the agents' own configuration directories under `home`.
ProtectedPaths protected_paths_for(const shim::Policy& policy, const std::filesystem::path& home);

}  // namespace sandshim::hooks
