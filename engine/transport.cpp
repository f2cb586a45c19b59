#include "engine/transport.hpp"

namespace sandshim::engine {

std::string describe(const Transport& transport) {
  if (const auto* tls = std::get_if<TlsEndpoint>(&transport)) {
    return "tcp://" + tls->host + ":" + tls->port + " (TLS)";
  }
  if (const auto* ssh = std::get_if<SshEndpoint>(&transport)) {
    return "ssh://" + (ssh->user.empty() ? "" : ssh->user + "@") + ssh->host +
           (ssh->port.empty() ? "" : ":" + ssh->port);
  }
  return "unix://" + std::get<std::filesystem::path>(transport).string();
}

bool is_remote(const Transport& transport) {
  return !std::holds_alternative<std::filesystem::path>(transport);
}

}  // namespace sandshim::engine
