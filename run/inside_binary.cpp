#include "run/inside_binary.hpp"

#include <unistd.h>

#include <string>
#include <system_error>

#include "common/error.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

fs::path locate_inside_binary(std::string_view name) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path dir = self.parent_path();
  fs::path beside = dir / name;
  fs::path installed = (dir / ".." / "libexec" / "sandshim" / name).lexically_normal();
  for (const fs::path& candidate : {beside, installed}) {
    if (!ec && is_executable_file(candidate)) {
      return candidate;
    }
  }
  throw Fatal("cannot find " + std::string(name) +
                  ", which runs inside the container: looked for " + quoted(beside.string()) +
                  " and " + quoted(installed.string()) + "; reinstall sandshim",
              exit_code::k_sandbox_error);
}

}  // namespace sandshim::shim
