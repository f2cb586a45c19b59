#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace sandshim::broker {

// A workspace file larger than this is refused unread: a .sandshim.conf is a few lines.
inline constexpr size_t k_max_workspace_config_bytes = 64 * 1024;

// The workspace's .sandshim.conf files as (source, text), outermost first, as direct mode would
// find them (every one from the outermost enclosing git repository down to the workspace), read
// through the caller's cwd descriptor: the directories are reached by ".." from it, never by a
// name, and each file is opened O_NOFOLLOW and must be a regular file within the cap. Throws a
// Fatal naming the file (never its content) when one is a link, not a regular file, too large
// or unreadable. `cwd` is the admitted path of the descriptor, for the sources' names only.
std::vector<std::pair<std::string, std::string>> read_workspace_configs(
    int cwd_fd, const std::filesystem::path& cwd);

}  // namespace sandshim::broker
