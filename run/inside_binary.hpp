#pragma once

#include <filesystem>
#include <string_view>

namespace sandshim::shim {

// The host path of `name`, one of sandshim's programs that run inside containers (inside/):
// beside this executable (the build tree), else in ../libexec/sandshim/ (an install). Throws
// Fatal (exit 125, one line naming the file) when neither exists, so nothing runs without it.
std::filesystem::path locate_inside_binary(std::string_view name);

}  // namespace sandshim::shim
