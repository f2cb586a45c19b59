#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/workspace.hpp"

namespace sandshim::shim {

// Names that stay read-only inside a writable sub-path: they steer git, sandshim, the agents
// and their hooks on the host (the agents' from policy/known_agents.hpp), so a sandboxed run must
// never write them.
std::vector<std::string> protected_names();

// The binds that keep each protected name found directly in `dir` (open as `dir_fd`: names are
// looked up through it, as a broker's user may reach the caller's directory only through the
// held descriptor) read-only over itself: under sandbox.workspace = rw (dir: the workspace) and
// in each sandbox.writable path. Throws Fatal when a name cannot be looked up (it might be there).
std::vector<BindPath> protected_binds(const std::filesystem::path& dir, int dir_fd);

// The protected names `dir` (open as `dir_fd`) does not hold (a run under sandbox.workspace = rw
// must not make them).
std::vector<std::string> absent_protected_names(int dir_fd);

// A protected name that is a symbolic link: only what it leads to is kept read-only, the link
// itself lies in the writable workspace, so a run may replace it. One that is no longer this link
// after the run (another type, text or inode; an inode may be reused at once) is treated as a name
// the run created.
struct ProtectedLink {
  std::string name;
  ino_t ino = 0;
  std::string text;
  bool operator==(const ProtectedLink&) const = default;
};
std::vector<ProtectedLink> protected_links(int dir_fd);
// NAME as a ProtectedLink now (nullopt when it is no link or is gone).
std::optional<ProtectedLink> protected_link_at(int dir_fd, const std::string& name);

// Where a protected name a run created goes: NAME.sandshim-RUN_ID beside it.
std::string aside_name(const std::string& name, const std::string& run_id);

// Moves each protected name a run created at the workspace root aside (renames the entry itself,
// never through a link); a name not in protected_names() is left alone. One line per name:
// "created NAME, moved to ASIDE", or "created NAME (left in place: remove it)".
std::vector<std::string> move_created_aside(const std::filesystem::path& workspace,
                                            const std::string& run_id,
                                            const std::vector<std::string>& names);

// Makes each protected link again as it was before the run (CLAUDE.md -> AGENTS.md), one the run
// removed or that move_created_aside moved aside, never over an entry that is there now; a name
// not in protected_names() is left alone. One line per link: "removed the link NAME -> TEXT, made
// again", or "... (not made again: WHY)".
std::vector<std::string> restore_protected_links(const std::filesystem::path& workspace,
                                                 const std::vector<ProtectedLink>& links);

// The line that names what a run created and where it went (the audit row's part), and what the
// caller is told after it.
std::string created_names_summary(const std::vector<std::string>& lines);
inline constexpr const char* k_created_names_advice =
    "; such files steer git, an agent or the shell on the host, so a run may not make them: look "
    "at them before you take them back";

// Why a sandbox.writable path cannot be used, or empty.
std::string invalid_writable_path(const std::string& path);

// The binds that make each listed sub-path of the workspace (open as `workspace_fd`) writable,
// with every protected name found in it bound read-only over itself. Throws Fatal naming
// sandbox.writable when a path is missing or not a directory.
std::vector<BindPath> writable_binds(const std::filesystem::path& workspace, int workspace_fd,
                                     const std::vector<std::string>& paths);

// Where the interpreters' caches live inside the container under sandbox.cache = on.
inline constexpr const char* k_cache_mount = "/sandshim-cache";

// The cache directory of one workspace and user on the host, under sandshim's state directory,
// created on first use and owned by the container user; emptied when it has grown past
// `max_bytes` (sets `emptied`).
std::filesystem::path prepare_cache_dir(const std::filesystem::path& workspace, uid_t uid,
                                        gid_t gid, uint64_t max_bytes, bool& emptied);

// The environment that points the interpreters at the cache (NAME=VALUE).
std::vector<std::string> cache_environment();

// `sandshim gc`: removes cache directories whose workspace is gone; returns how many.
int collect_cache_garbage();

// Beside `dir` (a directory sandshim keeps for one workspace), the workspace it serves, in
// DIR.workspace, so `sandshim gc` can tell once it is gone.
void note_workspace_of(const std::filesystem::path& dir, const std::filesystem::path& workspace);
// Removes each directory under `root` noted for a workspace that no longer exists, with its
// DIR.workspace and DIR.lock; returns how many.
int remove_dirs_of_removed_workspaces(const std::filesystem::path& root);

}  // namespace sandshim::shim
