#pragma once

#include <filesystem>

#include "audit/commands.hpp"
#include "broker/protocol.hpp"

namespace sandshim::broker {

// The `status` verb's answer, as the broker sees it from its system file: engine, images, the
// audit's chain (verified as `audit` would for this caller) and the pool. Only reads: nothing
// is created, pulled, started or written, and no field comes from the caller.
BrokerStatus broker_status(const std::filesystem::path& system_file,
                           const audit::AuditContext& audit);

}  // namespace sandshim::broker
