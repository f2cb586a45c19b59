#include "broker/status.hpp"

#include <map>
#include <sstream>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "engine/enforcement.hpp"
#include "engine/engine.hpp"
#include "engine/engine_client.hpp"
#include "engine/engine_pool.hpp"
#include "engine/image_host.hpp"
#include "policy/broker_policy.hpp"
#include "policy/policy.hpp"
#include "pool/pool.hpp"

#ifndef SANDSHIM_VERSION
#define SANDSHIM_VERSION "unknown"
#endif

namespace sandshim::broker {

namespace {

std::string facts_line(const shim::Engine& engine, const shim::EngineFacts& facts) {
  return engine.describe() + " " + facts.server_version + ", " +
         (facts.rootless ? "rootless" : "rootful") + ", cgroup v" +
         (facts.cgroup_version.empty() ? "?" : facts.cgroup_version);
}

// The engine the broker's policy names, when it answers.
std::optional<shim::Engine> probe_engine(const shim::Policy& policy, BrokerStatus& status) {
  try {
    shim::Engine engine = shim::locate_engine(policy);
    status.engine = facts_line(engine, shim::probe_engine_facts(engine));
    status.engine_ok = true;
    return engine;
  } catch (const std::exception& e) {
    status.engine = "the broker's engine does not answer: " + first_line_of(e.what());
    return std::nullopt;
  }
}

// `sandshim audit verify` as this caller would run it through the broker: its first line.
void verify_audit(const audit::AuditContext& context, BrokerStatus& status) {
  std::error_code ec;
  if (!context.configured_db.empty() && !std::filesystem::exists(context.configured_db, ec)) {
    status.audit_ok = true;
    status.audit = "no run recorded yet (" + context.configured_db.string() +
                   " is created by the broker's first write)";
    return;
  }
  std::ostringstream out;
  try {
    status.audit_ok = audit::audit_main({"verify"}, context, out, false, false) == 0;
    status.audit = first_line_of(out.str());
  } catch (const std::exception& e) {
    status.audit = first_line_of(e.what());
  }
}

// The pool's setting and how many warm containers wait now (its entries, read, not locked).
std::string pool_line(const shim::Policy& policy) {
  if (policy.pool_size <= 0) {
    return "off (pool.size = 0): every run is cold";
  }
  const int64_t cap = shim::pool_cap(policy);
  const std::string growth =
      cap > policy.pool_size
          ? ", growing to " + std::to_string(cap) + " under demand (back after " +
                std::to_string(policy.pool_shrink_after_ms / 1000) + " s without a draw)"
          : ", not growing (pool.max <= pool.size)";
  return std::to_string(policy.pool_size) + " warm container(s) per image and workspace" + growth +
         ", runs " +
         (policy.pool_start == shim::PoolStart::launcher ? "through the launcher" : "by exec") +
         ", idle for at most " + std::to_string(policy.pool_idle_ttl_ms / 1000) + " s; " +
         std::to_string(shim::list_pool_entries().size()) + " waiting now";
}

}  // namespace

BrokerStatus broker_status(const std::filesystem::path& system_file,
                           const audit::AuditContext& audit) {
  BrokerStatus status;
  status.version = SANDSHIM_VERSION;
  status.system_config = system_file.string();
  shim::Policy policy;
  try {
    policy =
        shim::load_policy(shim::policy_inputs(shim::BrokerPolicySource{system_file, {}, {}}, {}));
    status.policy_ok = true;
    status.policy = "the broker's policy loads (" + system_file.string() + ")";
  } catch (const Fatal& e) {
    status.policy = first_line_of(e.what());
    return status;
  }
  if (auto engine = probe_engine(policy, status)) {
    status.images = image_statuses(policy, *engine);
  }
  verify_audit(audit, status);
  status.pool = pool_line(policy);
  auto engines = shim::survey_engines(policy);
  status.engines_total = static_cast<int64_t>(engines.size());
  status.engines_answering = shim::answering(engines);
  status.engines = engines.empty() ? "" : shim::engines_line(engines, policy.engine_max_runs);
  return status;
}

std::vector<ImageStatus> image_statuses(const shim::Policy& policy, const shim::Engine& engine) {
  std::map<std::string, std::vector<std::string>> commands_of;
  for (const auto& [command, image] : policy.images) {
    commands_of[image].push_back(command);
  }
  shim::EngineClient client(engine);
  std::vector<ImageStatus> images;
  for (const auto& [image, commands] : commands_of) {
    std::string inspected =
        shim::is_host_mode(image) ? std::string(shim::k_host_base_image) : image;
    bool present = client.inspect_image(inspected, std::chrono::seconds(20)).has_value();
    images.push_back({image, join(commands, ", "), present});
  }
  return images;
}

}  // namespace sandshim::broker
