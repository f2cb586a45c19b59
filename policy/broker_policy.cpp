#include "policy/broker_policy.hpp"

#include "audit/chain_key.hpp"
#include "common/error.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace {

std::optional<BrokerPolicySource>& current_source() {
  static std::optional<BrokerPolicySource> source;
  return source;
}

}  // namespace

void serve_as_broker(const std::filesystem::path& system_file) {
  current_source() = BrokerPolicySource{system_file, {}, {}};
}

void use_callers_config(std::vector<std::pair<std::string, std::string>> user_texts,
                        std::vector<std::pair<std::string, std::string>> workspace_texts) {
  if (!current_source()) {
    current_source() = BrokerPolicySource{};
  }
  current_source()->user_texts = std::move(user_texts);
  current_source()->workspace_texts = std::move(workspace_texts);
}

std::optional<BrokerPolicySource> broker_policy_source() {
  return current_source();
}

PolicyInputs policy_inputs(const std::optional<BrokerPolicySource>& source,
                           std::filesystem::path workspace, std::vector<Setting> flags) {
  PolicyInputs inputs(std::move(workspace), std::move(flags));
  if (source) {
    inputs.mode = PolicyMode::broker;
    inputs.system_file = source->system_file;
    inputs.user_files = std::vector<ConfigFile>{};
    inputs.user_texts = source->user_texts;
    inputs.workspace_texts = source->workspace_texts;
  }
  return inputs;
}

namespace {

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) ||
         std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

// Direct mode never writes the broker's database, however it is named (SANDSHIM_AUDIT_DB too).
void refuse_broker_database(const Policy& policy, const std::filesystem::path& db) {
  if (!policy.broker_audit_db.empty() && same_file(db, policy.broker_audit_db)) {
    throw Fatal("direct mode never writes the broker's audit database " + quoted(db.string()) +
                " (its chain is keyed); run through the broker, or name another database with "
                "`[audit] db` in your config or SANDSHIM_AUDIT_DB");
  }
}

}  // namespace

audit::StoreOptions audit_store_options(const Policy& policy, const std::filesystem::path& db,
                                        bool broker) {
  if (!broker) {
    refuse_broker_database(policy, db);
  }
  audit::StoreOptions options{db};
  if (broker && !policy.audit_key_file.empty()) {
    options.key = audit::load_or_create_chain_key(policy.audit_key_file);
  }
  if (broker) {
    options.anchor_file = policy.audit_anchor_file;
  }
  return options;
}

}  // namespace sandshim::shim
