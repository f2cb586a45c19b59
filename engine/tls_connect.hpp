#pragma once

// Internal to engine/: a TLS connection to a remote engine, handed to the verbs as one end of a
// local socket pair. A relay process holds the TLS side, so every verb, and the attach and event
// streams that the caller polls, read and write a plain descriptor as they do a unix socket.

#include <chrono>
#include <string>

#include "engine/reply.hpp"
#include "engine/transport.hpp"

namespace sandshim::engine::detail {

// The local end of a verified TLS connection to `endpoint`, or -1 with `fault` and `detail`.
// Connect, handshake and verification all finish before `deadline`.
struct TlsConnection {
  int fd = -1;
  Fault fault = Fault::none;
  std::string detail;
};
TlsConnection connect_tls(const TlsEndpoint& endpoint,
                          std::chrono::steady_clock::time_point deadline);

}  // namespace sandshim::engine::detail
