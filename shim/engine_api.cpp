#include "shim/engine_api.hpp"

#include <unistd.h>

#include "common/strings.hpp"
#include "engine/endpoint.hpp"

namespace sandshim::shim {

namespace {

// The client's environment is the one place the run's inputs were read; podman's rootless
// service socket lives under the caller's runtime directory.
std::string runtime_dir(const Engine& engine) {
  const std::string prefix = "XDG_RUNTIME_DIR=";
  for (const auto& entry : engine.env) {
    if (entry.starts_with(prefix)) {
      return entry.substr(prefix.size());
    }
  }
  return "";
}

// A service that answers at all answers a ping at once; a socket with nobody behind it refuses
// the connection at once.
constexpr std::chrono::milliseconds k_service_ping_timeout{500};

ApiPath podman_service_path(const std::filesystem::path& socket) {
  engine::Reply reply = engine::ApiClient(socket, k_service_ping_timeout).ping();
  if (reply.ok()) {
    return {socket, "podman's API service at " + socket.string()};
  }
  return {std::nullopt, "the podman client: its API service does not answer at " + socket.string() +
                            " (" + reply.describe() +
                            "; `podman system service --time=0` starts it)"};
}

}  // namespace

ApiPath engine_api_path(const Engine& engine, const Policy& policy) {
  if (policy.engine_api != EngineApi::on) {
    return {std::nullopt, "the " + engine.kind + " client (engine.api = off)"};
  }
  auto socket = engine_api_socket(engine);
  if (!socket) {
    return {std::nullopt, "the " + engine.kind + " client (no local API socket)"};
  }
  if (engine.dialect.is_podman()) {
    return podman_service_path(*socket);
  }
  return {socket, "the Engine API at " + socket->string()};
}

std::optional<std::filesystem::path> engine_api_socket(const Engine& engine) {
  return engine::api_socket(engine.kind, engine.endpoint, ::geteuid() != 0, runtime_dir(engine));
}

std::optional<engine::ApiClient> engine_api(const Engine& engine,
                                            std::chrono::milliseconds timeout) {
  if (auto socket = engine_api_socket(engine)) {
    return engine::ApiClient(*socket, timeout);
  }
  return std::nullopt;
}

std::optional<std::string> remote_mount_refusal(const Engine& engine) {
  if (engine::is_local_endpoint(engine.endpoint)) {
    return std::nullopt;
  }
  return "engine.endpoint " + quoted(engine.endpoint) +
         " is not on this machine: the workspace would be bind-mounted from that machine's file "
         "system, not this one's; run sandshim on the engine's machine, or set engine.endpoint "
         "to a local engine (empty, or unix:///path)";
}

}  // namespace sandshim::shim
