#pragma once

// The contract between the engine's TLS transport (engine/tls_connect.cpp) and its relay
// program, sandshim-tls (engine/tls_relay/relay.cpp): one process per connection holds the TLS
// session and OpenSSL, so the sandshim binary, which every shim and hook call loads, carries
// neither.
//
//   sandshim-tls HOST PORT CERT_DIR MILLISECONDS
//
// fd 3 is the local end of a socket pair; fd 4 is written once and closed: "ok\n" once the
// server's certificate is verified for HOST, else "unreachable DETAIL\n" or "timeout DETAIL\n"
// (connect, handshake and verification finish within MILLISECONDS). Then the relay copies bytes
// both ways between fd 3 and the TLS stream until both directions have ended.

namespace sandshim::engine::tls_relay {

inline constexpr const char* k_program = "sandshim-tls";
inline constexpr int k_local_fd = 3;
inline constexpr int k_status_fd = 4;
inline constexpr const char* k_ok = "ok";
inline constexpr const char* k_unreachable = "unreachable";
inline constexpr const char* k_timeout = "timeout";

}  // namespace sandshim::engine::tls_relay
