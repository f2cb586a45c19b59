#pragma once

// Internal to engine/: a connection to a docker engine through ssh, handed to the verbs as one
// end of a local socket pair, as tls_connect.hpp's is. The ssh client holds the other end as its
// stdin and stdout and runs `docker system dial-stdio` on the engine's machine (what docker's
// own client does for ssh://), so every verb and stream reads a plain descriptor.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/reply.hpp"
#include "engine/transport.hpp"

namespace sandshim::engine::detail {

// The ssh client, from fixed directories: never the caller's PATH.
std::optional<std::filesystem::path> find_ssh_client();

// ssh's command line for one connection: no configuration file (nothing of ~/.ssh/config steers
// it), no prompt, host keys only from known_hosts, nothing forwarded, no agent, no terminal.
std::vector<std::string> ssh_argv(const std::filesystem::path& client, const SshEndpoint& endpoint,
                                  std::chrono::milliseconds timeout);

// The local end of a connection through ssh, and ssh's stderr (read only when the exchange
// failed: it says why); -1 with `fault` and `detail` when ssh could not be started.
struct SshConnection {
  int fd = -1;
  int diagnostics = -1;
  Fault fault = Fault::none;
  std::string detail;
};
SshConnection connect_ssh(const SshEndpoint& endpoint, std::chrono::milliseconds timeout);

// What ssh wrote to `diagnostics` until it exited, `wait` at most.
std::string read_diagnostics(int diagnostics, std::chrono::milliseconds wait);

// One line for what ssh's stderr says went wrong (unreachable host, unknown or changed host
// key, login refused, no docker over there), with the fix; empty when ssh said nothing.
std::string ssh_failure(const SshEndpoint& endpoint, const std::string& ssh_stderr);

}  // namespace sandshim::engine::detail
