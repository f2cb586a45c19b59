#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/api_client.hpp"
#include "shim/engine.hpp"

namespace sandshim::shim {

// The socket where this engine serves its API on this machine: docker's (default or unix://
// endpoint), or podman's service socket (`podman system service`); nullopt for a remote
// endpoint, which only the client reaches. The socket may not answer: callers fall back to the
// client then.
std::optional<std::filesystem::path> engine_api_socket(const Engine& engine);

// A client of that API with `timeout` per call; nullopt when the engine has no local socket.
std::optional<engine::ApiClient> engine_api(const Engine& engine,
                                            std::chrono::milliseconds timeout);

// Why a run may not use this engine: it would bind-mount the workspace's path on the engine's
// own machine, where it names something else (or nothing). nullopt for a local engine.
std::optional<std::string> remote_mount_refusal(const Engine& engine);

}  // namespace sandshim::shim
