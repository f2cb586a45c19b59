#pragma once

#include <string>
#include <vector>

namespace sandshim::shim {

// Whether two descriptors are one file (dev and inode: one regular file, one pipe, one
// terminal), as `2>&1` leaves the caller's stdout and stderr.
bool same_open_file(int first, int second);

// The command with its stderr made a duplicate of its stdout inside the container, so both
// reach the caller as one stream in the order the program wrote them (the engine carries the
// two apart and their order would be lost).
std::vector<std::string> one_stream_command(const std::vector<std::string>& command);

// The descriptor the warm container's launcher gets as the command's stderr: the stdout pipe
// itself when the caller's two are one file, for the same reason.
int launcher_stderr(bool one_stream, int out, int err);

}  // namespace sandshim::shim
