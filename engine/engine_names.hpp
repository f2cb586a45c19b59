#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandshim::shim {

// The names and labels sandshim gives its containers: one place, so the run, the pool, gc, the
// guardian and the tests agree on them.
inline constexpr std::string_view k_container_prefix = "sandshim-";
inline constexpr std::string_view k_label_run = "org.sandshim.run";
inline constexpr std::string_view k_label_deadline = "org.sandshim.deadline";
inline constexpr std::string_view k_label_policy = "org.sandshim.policy";
inline constexpr std::string_view k_label_pool = "org.sandshim.pool";
inline constexpr std::string_view k_label_pool_owner = "org.sandshim.pool.owner";
inline constexpr std::string_view k_label_pool_expires = "org.sandshim.pool.expires";

// The container of run `run_id`.
inline std::string container_name_of(std::string_view run_id) {
  return std::string(k_container_prefix) + std::string(run_id);
}

// The run id in a container's name; nullopt when it is not one of sandshim's.
inline std::optional<std::string> run_id_of(std::string_view container_name) {
  if (!container_name.starts_with(k_container_prefix) ||
      container_name.size() == k_container_prefix.size()) {
    return std::nullopt;
  }
  return std::string(container_name.substr(k_container_prefix.size()));
}

// `--label=NAME=VALUE`, as the engine clients take it.
inline std::string label_flag(std::string_view label, std::string_view value) {
  return "--label=" + std::string(label) + "=" + std::string(value);
}

}  // namespace sandshim::shim
