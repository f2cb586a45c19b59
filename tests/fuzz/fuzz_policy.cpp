// The config file parser and the key table: any text a workspace's .sandshim.conf may hold is
// either applied or refused with a Fatal, never a crash; a refused tighten-only layer changes
// nothing it was not allowed to.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "fuzz_support.hpp"
#include "policy/policy.hpp"

using namespace sandshim;

namespace {

// Reads every key back, as `sandshim policy show` does.
void render_every_key(const shim::Policy& policy) {
  for (const auto& key : shim::policy_keys()) {
    (void)shim::render_value(policy, key.name);
  }
  (void)policy.digest();
  (void)policy.limits_summary();
}

void apply_layer(const std::vector<shim::Setting>& settings, shim::Trust trust) {
  shim::Policy policy;
  try {
    shim::apply_settings(policy, settings, trust);
  } catch (const Fatal&) {
    return;  // refused, with every bad key named
  }
  render_every_key(policy);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<shim::Setting> settings;
  try {
    settings = shim::parse_config_text(text, ".sandshim.conf");
  } catch (const Fatal&) {
    return 0;
  }
  apply_layer(settings, shim::Trust::full);
  apply_layer(settings, shim::Trust::tighten_only);
  return 0;
}
