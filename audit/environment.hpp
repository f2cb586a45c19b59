#pragma once

#include <filesystem>
#include <optional>

namespace sandshim::audit {

// $SANDSHIM_AUDIT_DB under the one rule every reader applies (the shim that writes and `audit`
// that reads): an absolute path, else it is not set.
std::optional<std::filesystem::path> audit_db_from_environment();

// The database runs are written to and `audit` reads: $SANDSHIM_AUDIT_DB, else the policy's
// audit.db (`configured`, empty when unset), else the default under XDG_STATE_HOME.
std::filesystem::path resolve_audit_db(const std::filesystem::path& configured);

}  // namespace sandshim::audit
