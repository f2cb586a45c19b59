#include "run/one_stream.hpp"

#include <sys/stat.h>

namespace sandshim::shim {

bool same_open_file(int first, int second) {
  struct stat a {};
  struct stat b {};
  return ::fstat(first, &a) == 0 && ::fstat(second, &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

std::vector<std::string> one_stream_command(const std::vector<std::string>& command) {
  // The image's shell replaces itself with the command: no process stays in between, and the
  // command's argv is the caller's.
  std::vector<std::string> wrapped = {"/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"};
  wrapped.insert(wrapped.end(), command.begin(), command.end());
  return wrapped;
}

int launcher_stderr(bool one_stream, int out, int err) {
  return one_stream ? out : err;
}

}  // namespace sandshim::shim
