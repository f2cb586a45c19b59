#include "audit/environment.hpp"

#include <cstdlib>

#include "audit/store.hpp"
#include "common/environment.hpp"

namespace sandshim::audit {

std::optional<std::filesystem::path> audit_db_from_environment() {
  return environment::audit_db();
}

std::filesystem::path resolve_audit_db(const std::filesystem::path& configured) {
  if (auto from_env = audit_db_from_environment()) {
    return *from_env;
  }
  return configured.empty() ? default_database_path() : configured;
}

}  // namespace sandshim::audit
