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

// A docker engine on another machine reached through ssh: each connection is the ssh client
// running `docker system dial-stdio` there (what docker's own client does for ssh://). The host
// must be in `known_hosts` already (never accepted on first sight) and the key must log in
// without a prompt. Empty paths: ssh's defaults for the user sandshim runs as.
struct SshEndpoint {
  std::string user;  // empty: ssh's default (the local user's name)
  std::string host;
  std::string port;                   // empty: 22
  std::filesystem::path identity;     // engine.ssh_identity, or the entry's ssh_identity=
  std::filesystem::path known_hosts;  // engine.ssh_known_hosts, or the entry's ssh_known_hosts=

  bool operator==(const SshEndpoint&) const = default;
};

// How the client reaches the engine: its unix socket on this machine, TLS over TCP, or ssh.
// Only engine/ looks inside; every verb works the same over each.
using Transport = std::variant<std::filesystem::path, TlsEndpoint, SshEndpoint>;

// "unix:///var/run/docker.sock", "tcp://host:2376 (TLS)" or "ssh://me@host:22", for logs and
// messages.
std::string describe(const Transport& transport);

// Whether the engine is on another machine (its paths are not this machine's).
bool is_remote(const Transport& transport);

}  // namespace sandshim::engine
