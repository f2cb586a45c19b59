#pragma once

#include <filesystem>
#include <string>
#include <variant>

namespace sandshim::engine {

// An engine on another machine over TCP with TLS both ways: the client presents cert.pem (with
// key.pem) and accepts only a server whose certificate ca.pem signed for `host`. Plain TCP is
// never a transport: whoever reaches an unauthenticated engine is root on its machine.
struct TlsEndpoint {
  std::string host;
  std::string port;
  std::filesystem::path cert_dir;  // ca.pem, cert.pem, key.pem (engine.tls_cert_path)

  bool operator==(const TlsEndpoint&) const = default;
};

// How the client reaches the engine: its unix socket on this machine, or TLS over TCP. Only
// engine/ looks inside; every verb works the same over either.
using Transport = std::variant<std::filesystem::path, TlsEndpoint>;

// "unix:///var/run/docker.sock" or "tcp://host:2376 (TLS)", for logs and messages.
std::string describe(const Transport& transport);

// Whether the engine is on another machine (its paths are not this machine's).
bool is_remote(const Transport& transport);

}  // namespace sandshim::engine
