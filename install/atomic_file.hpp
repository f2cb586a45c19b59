#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim::install {

// The file's bytes; nullopt when it does not exist. Throws Fatal naming the file and errno
// for any other failure, so an unreadable config is never mistaken for a missing one.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Replaces the file with `content` so that readers see the old or the new bytes, never a mix:
// a temporary file in the same directory, fsync, rename. The permission bits of the file it
// replaces are kept (a new file gets 0666 & ~umask); a symlink is followed, so a settings file
// linked from a dotfiles repository stays a link. Parent directories are created.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace sandshim::install
