#include "engine/engine_api.hpp"

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
    return {engine::Transport(socket), "podman's API service at " + socket.string()};
  }
  return {std::nullopt, "the podman client: its API service does not answer at " + socket.string() +
                            " (" + reply.describe() +
                            "; `podman system service --time=0` starts it)"};
}

}  // namespace

ApiPath engine_api_path(const Engine& engine, const Policy& policy) {
  if (auto tls = engine_api_transport(engine); tls && engine::is_remote(*tls)) {
    return {tls, "the Engine API at " + engine::describe(*tls)};  // the client has no shipping
  }
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
  return {*socket, "the Engine API at " + socket->string()};
}

std::optional<std::filesystem::path> engine_api_socket(const Engine& engine) {
  return engine::api_socket(engine.kind, engine.endpoint, ::geteuid() != 0, runtime_dir(engine));
}

std::optional<engine::Transport> engine_api_transport(const Engine& engine) {
  if (engine.kind == "docker") {
    if (auto tls = engine::tls_endpoint(engine.endpoint, engine.tls_cert_path)) {
      return *tls;
    }
    if (auto ssh =
            engine::ssh_endpoint(engine.endpoint, engine.ssh_identity, engine.ssh_known_hosts)) {
      return *ssh;
    }
  }
  if (auto socket = engine_api_socket(engine)) {
    return *socket;
  }
  return std::nullopt;
}

std::optional<engine::ApiClient> engine_api(const Engine& engine,
                                            std::chrono::milliseconds timeout) {
  if (auto transport = engine_api_transport(engine)) {
    return engine::ApiClient(*transport, timeout);
  }
  return std::nullopt;
}

std::optional<std::string> remote_mount_refusal(const Engine& engine) {
  if (engine::is_local_endpoint(engine.endpoint)) {
    return std::nullopt;
  }
  if (auto transport = engine_api_transport(engine); transport && engine::is_remote(*transport)) {
    return std::nullopt;  // the workspace travels (remote_workspace.hpp)
  }
  if (engine.kind == "docker" && engine.endpoint.starts_with("ssh://")) {
    return "engine.endpoint " + quoted(engine.endpoint) +
           " is not ssh://[user@]host[:port] (a user and host name, an optional port, nothing "
           "after them)";
  }
  return "engine.endpoint " + quoted(engine.endpoint) + " is not on this machine and only " +
         "docker's Engine API (tcp:// with engine.tls_cert_path, or ssh://) ships the workspace "
         "there (" +
         engine.kind +
         "'s remote client would bind-mount this machine's paths, which name that machine's "
         "files); use docker there, run sandshim on the engine's machine, or set "
         "engine.endpoint to a local engine (empty, or unix:///path)";
}

}  // namespace sandshim::shim
