#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/api_client.hpp"
#include "engine/engine.hpp"

namespace sandshim::shim {

// The socket where this engine serves its API on this machine: docker's (default or unix://
// endpoint), or podman's service socket (`podman system service`); nullopt for a remote
// endpoint, which only the client reaches. The socket may not answer: callers fall back to the
// client then.
std::optional<std::filesystem::path> engine_api_socket(const Engine& engine);

// How the API client reaches this engine: its local socket, TLS for a docker engine at tcp://
// with engine.tls_cert_path, or ssh for a docker engine at ssh://; nullopt when only the
// engine's client reaches it (podman's remote endpoints).
std::optional<engine::Transport> engine_api_transport(const Engine& engine);

// A client of that API with `timeout` per call; nullopt when there is no transport.
std::optional<engine::ApiClient> engine_api(const Engine& engine,
                                            std::chrono::milliseconds timeout);

// Which path a cold run takes to the engine, and why: the API socket, or the client.
struct ApiPath {
  std::optional<engine::Transport> transport;  // set: the run may go over this transport
  std::string reason;                          // one clause for doctor and the debug log
};

// The path in force for `policy`: docker's API socket with engine.api = on; podman's API service
// socket when it answers a ping now (there is no socket activation without systemd), else
// podman's client; the client for engine.api = off or a remote endpoint.
ApiPath engine_api_path(const Engine& engine, const Policy& policy);

// Why a run may not use this engine: it would bind-mount the workspace's path on the engine's
// own machine, where it names something else (or nothing). nullopt for a local engine and for
// docker over TLS or ssh, where the workspace travels instead.
std::optional<std::string> remote_mount_refusal(const Engine& engine);

}  // namespace sandshim::shim
