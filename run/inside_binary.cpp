#include "run/inside_binary.hpp"

#include <string>

#include "common/error.hpp"
#include "common/paths.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

fs::path locate_inside_binary(std::string_view name) {
  if (std::optional<fs::path> found = find_companion(name, "sandshim")) {
    return *found;
  }
  throw Fatal("cannot find " + std::string(name) +
                  ", which runs inside the container: looked for " +
                  companion_places(name, "sandshim") + "; reinstall sandshim",
              exit_code::k_sandbox_error);
}

}  // namespace sandshim::shim
