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

}  // namespace

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
