#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sandshim {

namespace fs = std::filesystem;

// Walks PATH for an executable named `name`, skipping candidates the predicate rejects
// (sandshim's own directory, its own binary): a shim must never find itself.
std::optional<fs::path> find_in_path(const std::string& name, const std::string& path_variable,
                                     const std::function<bool(const fs::path&)>& skip);

// What find_in_path (without a skip) finds for each of `names`, found by listing each PATH
// directory once instead of probing every name in every directory; names found nowhere are
// absent from the result.
std::map<std::string, fs::path> find_each_in_path(const std::set<std::string_view>& names,
                                                  const std::string& path_variable);

// The directory holding `.git` at or above `start`, if any.
std::optional<fs::path> find_git_root(const fs::path& start);

// Why `uid:gid` (no supplementary groups, as in a container) cannot list and read `dir`:
// the first path component that stops it, or nullopt when it can.
std::optional<std::string> unreadable_component(const fs::path& dir, uid_t uid, gid_t gid);

// True when `path` equals `base` or lies below it (both canonical).
bool is_within(const fs::path& path, const fs::path& base);

// The directory above the bin/ that holds `program` (`.venv/bin/python` -> `.venv`), made
// absolute against `cwd`, lexically; nullopt when the program's directory is no bin/.
std::optional<fs::path> bin_parent_of(std::string_view program, const fs::path& cwd);

// The canonical path of the running binary (/proc/self/exe).
fs::path self_executable();

// Where a program shipped with this one may be: beside the running binary (a build tree), then
// ../libexec/SUBDIR/ from it (an install).
std::vector<fs::path> companion_candidates(std::string_view name, std::string_view install_subdir);
// The first of companion_candidates that is an executable file, or nullopt.
std::optional<fs::path> find_companion(std::string_view name, std::string_view install_subdir);
// Where find_companion looked, quoted, for a message ("'A' and 'B'").
std::string companion_places(std::string_view name, std::string_view install_subdir);

// $HOME, or the passwd entry when HOME is unset.
fs::path home_directory();
// $XDG_<kind>_HOME or its default below HOME ("config" -> ~/.config, "state", "data").
fs::path xdg_directory(const std::string& kind);

}  // namespace sandshim
