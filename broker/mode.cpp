#include "broker/mode.hpp"

#include <sys/stat.h>

#include <cstdlib>

#include "broker/settings.hpp"
#include "broker/unix_socket.hpp"
#include "common/environment.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

// The local engine socket this uid would use in direct mode.
fs::path engine_socket() {
  if (auto host = environment::docker_host()) {
    std::string endpoint = *host;
    if (endpoint.starts_with("unix://")) {
      return endpoint.substr(7);
    }
  }
  return "/var/run/docker.sock";
}

ModeReport direct_mode(const ClientSettings& settings) {
  std::string why = settings.mode == BrokerMode::off
                        ? "direct mode (broker.mode = off in " + settings.source + ")"
                        : "direct mode (no broker answers at " + settings.socket.string() + ")";
  fs::path socket = engine_socket();
  struct stat st {};
  bool rootful = ::stat(socket.c_str(), &st) == 0 && st.st_uid == 0;
  if (rootful && connect_unix(socket)) {
    return {ModeReport::Level::warn,
            why + ": this uid reaches the rootful engine socket " + socket.string() +
                ", which is root-equivalent (an agent could `docker run -v /:/host`)",
            "install/setup.sh (or the package's sandshim.socket) starts the broker; then take "
            "users out of the engine's group"};
  }
  return {ModeReport::Level::ok, why + "; this uid does not reach a rootful engine socket", ""};
}

}  // namespace

ModeReport mode_report() {
  ClientSettings settings;
  try {
    settings = client_settings();
  } catch (const std::exception& e) {
    return {ModeReport::Level::fail, e.what(),
            "fix broker.mode in " + std::string(k_system_config)};
  }
  if (settings.mode != BrokerMode::off && connect_unix(settings.socket)) {
    return {ModeReport::Level::ok,
            "broker mode: the broker at " + settings.socket.string() +
                " runs every request (its engine, policy and audit); mode " +
                describe(settings.mode) + " from " + settings.source,
            ""};
  }
  if (settings.mode == BrokerMode::required) {
    return {ModeReport::Level::fail,
            "broker.mode = required (" + settings.source + ") but no broker answers at " +
                settings.socket.string() + ": every run fails closed",
            "systemctl start sandshim.socket, or install/setup.sh"};
  }
  return direct_mode(settings);
}

}  // namespace sandshim::broker
