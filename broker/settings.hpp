#pragma once

#include <filesystem>
#include <string>

#include "policy/policy.hpp"

namespace sandshim::broker {

inline constexpr const char* k_default_socket = shim::k_default_broker_socket;
inline constexpr const char* k_system_config = "/etc/sandshim/config";

// How the thin clients find the broker. Only the administrator's file decides whether it is
// required: no user file or variable can turn a required broker off.
enum class BrokerMode { automatic, required, off };

struct ClientSettings {
  BrokerMode mode = BrokerMode::automatic;
  std::filesystem::path socket = k_default_socket;
  std::string source = "default";  // where the mode came from, for doctor and messages
};

// broker.mode and broker.socket from /etc/sandshim/config; then, unless the broker is
// required, SANDSHIM_BROKER=off|required and SANDSHIM_BROKER_SOCKET (tests, private brokers).
ClientSettings client_settings();

std::string describe(BrokerMode mode);

}  // namespace sandshim::broker
