#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/transport.hpp"

namespace sandshim::engine {

// Whether `endpoint` (engine.endpoint) names an engine on this machine: empty (the default
// socket) or unix://. A bind mount means the same path only to a local engine.
bool is_local_endpoint(const std::string& endpoint);

// Where the engine of `kind` (docker | podman) serves its API on this machine for `endpoint`:
// docker's default socket, podman's service socket (rootful under /run/podman, rootless under
// `runtime_dir`), or the unix:// path. nullopt for a remote endpoint (ssh://, tcp://), which
// only the client can reach.
std::optional<std::filesystem::path> api_socket(const std::string& kind,
                                                const std::string& endpoint, bool rootless,
                                                const std::string& runtime_dir);

// The TLS endpoint of `endpoint` when it is tcp://HOST:PORT and `cert_dir` names the client's
// certificates; nullopt otherwise (plain TCP is never a transport).
std::optional<TlsEndpoint> tls_endpoint(const std::string& endpoint, const std::string& cert_dir);

}  // namespace sandshim::engine
