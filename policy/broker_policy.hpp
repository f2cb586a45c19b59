#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/store.hpp"
#include "policy/policy.hpp"

namespace sandshim::shim {

// Where a broker's worker takes its policy from: the broker's system file (the floor) and the
// caller's config files as the client sent their text. Never the broker's own user files.
struct BrokerPolicySource {
  std::filesystem::path system_file = k_system_config;
  std::vector<std::pair<std::string, std::string>> user_texts;
  // The workspace's .sandshim.conf texts, read through the caller's cwd descriptor.
  std::vector<std::pair<std::string, std::string>> workspace_texts;
};

// Set by `sandshim broker` (its system file) and per request by its worker (the caller's texts);
// from then on this process loads policies in broker mode.
void serve_as_broker(const std::filesystem::path& system_file);
void use_callers_config(std::vector<std::pair<std::string, std::string>> user_texts,
                        std::vector<std::pair<std::string, std::string>> workspace_texts = {});
// The source when this process serves a broker's caller, nullopt in direct mode.
std::optional<BrokerPolicySource> broker_policy_source();

// The inputs of one load: direct mode without a source, else broker mode (flags only tighten).
PolicyInputs policy_inputs(const std::optional<BrokerPolicySource>& source,
                           std::filesystem::path workspace, std::vector<Setting> flags = {});

// The broker's store is keyed and anchored as its policy says; direct mode's is neither.
audit::StoreOptions audit_store_options(const Policy& policy, const std::filesystem::path& db,
                                        bool broker);

}  // namespace sandshim::shim
