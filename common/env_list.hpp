#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandshim {

// The value of `name` in a NAME=VALUE list (an environment passed as a value, not environ),
// nullopt when unset.
inline std::optional<std::string> env_value(const std::vector<std::string>& environment,
                                            std::string_view name) {
  for (const std::string& entry : environment) {
    if (entry.size() > name.size() && entry[name.size()] == '=' && entry.starts_with(name)) {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

}  // namespace sandshim
