#pragma once

#include <filesystem>
#include <vector>

#include "audit/commands.hpp"
#include "broker/protocol.hpp"
#include "engine/engine.hpp"
#include "policy/policy.hpp"

namespace sandshim::broker {

// The `status` verb's answer, as the broker sees it from its system file: engine, images, the
// audit's chain (verified as `audit` would for this caller) and the pool. Only reads: nothing
// is created, pulled, started or written, and no field comes from the caller.
BrokerStatus broker_status(const std::filesystem::path& system_file,
                           const audit::AuditContext& audit);

// Each image of the policy's images.COMMAND once, with the commands it serves, and whether the
// engine holds it (`image inspect` only, never a pull; a host-mode image is its empty base):
// the broker's `status`, and `sandshim doctor`'s image lines in direct mode.
std::vector<ImageStatus> image_statuses(const shim::Policy& policy, const shim::Engine& engine);

}  // namespace sandshim::broker
