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

// The ssh endpoint of `endpoint` when it is ssh://[user@]host[:port] with nothing after it
// (docker's ssh:// names no socket), with the identity and known_hosts files (empty: ssh's
// defaults); nullopt otherwise. A name ssh would read as an option (leading '-') or with a
// character outside a user's or host's name is refused: it goes on ssh's command line.
std::optional<SshEndpoint> ssh_endpoint(const std::string& endpoint, const std::string& identity,
                                        const std::string& known_hosts);

}  // namespace sandshim::engine
