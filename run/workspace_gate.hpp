#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

// The broker's check that the engine mounted the caller's directory: the engine mounts the
// workspace by name, so the container's first program (sandshim-gate) compares what it sees
// with the device and inode of the directories the caller's descriptor held.
struct WorkspaceGate {
  std::filesystem::path binary;  // the static sandshim-gate, mounted read-only
  std::string workspace_id;      // DEV:INO of the workspace (an ancestor of the held cwd)
  std::string cwd_id;            // DEV:INO of the held cwd
  // The binds inside the workspace, also mounted by name: target, DEV:INO of what the workspace
  // held there (binds_beneath).
  std::vector<std::pair<std::filesystem::path, std::string>> binds;
};

// Where the gate is mounted inside the container.
inline constexpr const char* k_gate_target = "/.sandshim/gate";

// The gate of a run whose process cwd is the caller's held directory (a broker's worker):
// identities from "." and its parents, never from names. Throws Fatal with one line when the
// gate binary is missing or could be replaced by someone else, or `cwd` is not under
// `workspace`.
WorkspaceGate gate_for_held_cwd(const std::filesystem::path& workspace,
                                const std::filesystem::path& cwd);

// The workspace of a run whose process cwd is the caller's held directory: `cwd`'s ancestor
// at `workspace`'s depth, reached through "..", never by name (O_PATH). Throws Fatal.
UniqueFd open_held_workspace(const std::filesystem::path& workspace,
                             const std::filesystem::path& cwd);

// The binds inside WORKSPACE (open as `workspace_fd`) that a run asks for, with the DEV:INO of
// what each target leads to, resolved beneath the workspace (openat2 RESOLVE_BENEATH). The
// engine follows a link by name wherever it leads, with root's rights, so a link that leads out
// of the workspace (an absolute one included) throws Fatal naming it. A bind of a workspace
// path at a fixed place outside it (a broker's .git directories) is listed with what its source
// leads to; binds from elsewhere (a git stage, a broker's copies) are not listed.
std::vector<std::pair<std::filesystem::path, std::string>> binds_beneath(
    int workspace_fd, const std::filesystem::path& workspace, const std::vector<BindPath>& binds);

// What `relative` leads to in the workspace, opened to read (a link followed beneath it, never
// out of it). Throws Fatal with the one line the run is refused with.
UniqueFd open_readable_beneath(int workspace_fd, const std::filesystem::path& relative);

// The gate's arguments before the caller's command:
// WORKSPACE DEV:INO CWD_DEV:INO [TARGET DEV:INO]... --.
std::vector<std::string> gate_prefix(const WorkspaceGate& gate,
                                     const std::filesystem::path& workspace);

}  // namespace sandshim::shim
