#pragma once

#include <filesystem>
#include <string_view>

namespace sandshim::shim {

// The static program `name` that sandshim mounts into containers: beside the running binary (a
// build tree), else in ../libexec/sandshim of its directory (an installed tree); throws Fatal
// (exit 125, one line naming the file) when neither exists, so nothing starts without it.
std::filesystem::path locate_inside_binary(std::string_view name);

}  // namespace sandshim::shim
