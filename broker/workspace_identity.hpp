#pragma once

#include <filesystem>
#include <vector>

namespace sandshim::broker {

// Where engines keep their sockets: a workspace holding one is refused.
std::vector<std::filesystem::path> engine_socket_paths();

// The caller's cwd as received (an O_PATH descriptor, opened by the client at `stated`),
// admitted as the start of a workspace: the kernel's name of that directory must still be the
// stated path (else it was renamed since); system directories and directories holding
// an engine socket are refused; the path must lead, without a symlink, to the same directory
// (a rename or a symlink swapped in since the client opened it is refused). Throws Fatal with
// one line; returns the path.
std::filesystem::path admit_cwd(int cwd_fd, const std::filesystem::path& stated,
                                const std::filesystem::path& caller_home,
                                const std::vector<std::filesystem::path>& engine_sockets);

// Whether two descriptors name the same directory (device and inode): the workspace walks compare
// what a path opens with what they hold.
bool same_directory(int a, int b);

// True for /run, /var/run, /proc, /sys, /dev and what is inside them.
bool is_system_directory(const std::filesystem::path& path);

}  // namespace sandshim::broker
