#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sandshim::shim {

// The directory mounted into the sandbox: the enclosing git root, or the cwd without one.
// Throws Fatal for a workspace that must never be mounted (/, the home directory).
std::filesystem::path resolve_workspace(const std::filesystem::path& cwd,
                                        const std::filesystem::path& home);

// A host path bound into the sandbox, as the engine's mounts are made of it.
struct BindPath {
  std::filesystem::path source;
  std::filesystem::path target;
  bool read_only = false;
};

// A bind whose paths cannot bend the mount: absolute, without control characters (throws Fatal
// naming the path).
BindPath checked_bind(const std::filesystem::path& source, const std::filesystem::path& target,
                      bool read_only);

// A mount specification cannot be bent by the path's bytes: commas and quotes are CSV-quoted,
// control characters refused (throws Fatal naming the path).
std::string bind_mount_spec(const std::filesystem::path& path, bool read_only);
// The same for a mount whose source on the host differs from its target inside (masks).
std::string bind_mount_spec(const std::filesystem::path& source,
                            const std::filesystem::path& target, bool read_only);

// Refuses, with the fix, a workspace the container user could not read.
void require_readable_by(const std::filesystem::path& workspace, uid_t uid, gid_t gid);

// Host paths named in argv that exist outside the workspace (and outside `also_mounted`: host
// mode's read-only toolchain) are invisible in the sandbox: say so instead of letting the
// program fail with "file not found".
std::vector<std::string> arguments_outside_workspace(
    const std::vector<std::string>& argv, const std::filesystem::path& cwd,
    const std::filesystem::path& workspace,
    const std::vector<std::filesystem::path>& also_mounted = {});

}  // namespace sandshim::shim
