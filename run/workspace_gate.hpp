#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sandshim::shim {

// The broker's check that the engine mounted the caller's directory: the engine mounts the
// workspace by name, so the container's first program (sandshim-gate) compares what it sees
// with the device and inode of the directories the caller's descriptor held.
struct WorkspaceGate {
  std::filesystem::path binary;  // the static sandshim-gate, mounted read-only
  std::string workspace_id;      // DEV:INO of the workspace (an ancestor of the held cwd)
  std::string cwd_id;            // DEV:INO of the held cwd
};

// Where the gate is mounted inside the container.
inline constexpr const char* k_gate_target = "/.sandshim/gate";

// The gate of a run whose process cwd is the caller's held directory (a broker's worker):
// identities from "." and its parents, never from names. Throws Fatal with one line when the
// gate binary is missing or could be replaced by someone else, or `cwd` is not under
// `workspace`.
WorkspaceGate gate_for_held_cwd(const std::filesystem::path& workspace,
                                const std::filesystem::path& cwd);

// The gate's arguments before the caller's command: WORKSPACE DEV:INO CWD_DEV:INO --.
std::vector<std::string> gate_prefix(const WorkspaceGate& gate,
                                     const std::filesystem::path& workspace);

}  // namespace sandshim::shim
