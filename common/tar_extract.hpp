#pragma once

// Unpacks a tar read by tar::read beneath one directory of this machine, refusing anything that
// could land elsewhere: the archive came from a container and is hostile until proven otherwise.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/tar.hpp"

namespace sandshim::tar {

// What an extraction wrote, or why it wrote nothing.
struct Extracted {
  uint64_t files = 0;
  uint64_t directories = 0;
  uint64_t bytes = 0;
  std::string error;  // empty on success; the archive is refused whole, before any write
};

// Writes `entries` beneath `dir` (which must exist). Every entry's path must be `top` or lie
// under `top/`, and `top` is replaced by `dir`: docker's archive names the fetched directory
// by its last component. Refused whole, before anything is written: an absolute path, `..`, a
// symlink, a hard link, a device or fifo, a path outside `top`. Writes go through openat2 with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, so a link planted on this side cannot redirect them.
// Files keep their execute bits, never set-id bits; ownership is the writer's.
Extracted extract_beneath(const std::filesystem::path& dir, const std::vector<Entry>& entries,
                          const std::string& top);

}  // namespace sandshim::tar
