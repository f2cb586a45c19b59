#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandshim::audit {

// The stored names of an enum, one table per enum, so writing and parsing cannot drift apart.
template <typename Enum, size_t N>
struct EnumNames {
  std::array<std::pair<Enum, std::string_view>, N> entries;

  std::string name(Enum value) const {
    for (const auto& [entry, text] : entries) {
      if (entry == value) {
        return std::string(text);
      }
    }
    return "unknown";
  }

  std::optional<Enum> parse(std::string_view text) const {
    for (const auto& [entry, name] : entries) {
      if (name == text) {
        return entry;
      }
    }
    return std::nullopt;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> result;
    for (const auto& entry : entries) {
      result.emplace_back(entry.second);
    }
    return result;
  }
};

}  // namespace sandshim::audit
