#include "broker/settings.hpp"

#include <cstdlib>

#include "common/environment.hpp"
#include "common/error.hpp"
#include "policy/policy.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

BrokerMode parse_mode(const std::string& value, const std::string& source) {
  if (value == "auto") {
    return BrokerMode::automatic;
  }
  if (value == "required") {
    return BrokerMode::required;
  }
  if (value == "off") {
    return BrokerMode::off;
  }
  throw Fatal("broker.mode in " + source + " is \"" + value +
              "\": expected auto, required or off; fix " + source);
}

void apply_system_file(ClientSettings& settings) {
  std::error_code ec;
  if (!fs::exists(k_system_config, ec)) {
    return;
  }
  for (const auto& setting : shim::read_config_file(k_system_config)) {
    if (setting.key == "broker.mode") {
      settings.mode = parse_mode(setting.value, k_system_config);
      settings.source = k_system_config;
    } else if (setting.key == "broker.socket" && !setting.value.empty()) {
      settings.socket = setting.value;
    }
  }
}

void apply_environment(ClientSettings& settings) {
  if (auto mode = environment::broker_mode()) {
    settings.mode = parse_mode(*mode, "$SANDSHIM_BROKER");
    settings.source = "$SANDSHIM_BROKER";
  }
  if (auto socket = environment::broker_socket()) {
    settings.socket = *socket;
  }
}

}  // namespace

ClientSettings client_settings() {
  ClientSettings settings;
  apply_system_file(settings);
  if (settings.mode != BrokerMode::required) {
    apply_environment(settings);
  }
  return settings;
}

std::string describe(BrokerMode mode) {
  switch (mode) {
    case BrokerMode::required:
      return "required";
    case BrokerMode::off:
      return "off";
    case BrokerMode::automatic:
      break;
  }
  return "auto";
}

}  // namespace sandshim::broker
