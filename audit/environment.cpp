#include "audit/environment.hpp"

#include <cstdlib>

#include "audit/store.hpp"

namespace sandshim::audit {

std::optional<std::filesystem::path> audit_db_from_environment() {
  const char* value = std::getenv("SANDSHIM_AUDIT_DB");
  if (value == nullptr || value[0] != '/') {
    return std::nullopt;
  }
  return std::filesystem::path(value);
}

std::filesystem::path resolve_audit_db(const std::filesystem::path& configured) {
  if (auto from_env = audit_db_from_environment()) {
    return *from_env;
  }
  return configured.empty() ? default_database_path() : configured;
}

}  // namespace sandshim::audit
