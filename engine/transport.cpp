#include "engine/transport.hpp"

namespace sandshim::engine {

std::string describe(const Transport& transport) {
  if (const auto* tls = std::get_if<TlsEndpoint>(&transport)) {
    return "tcp://" + tls->host + ":" + tls->port + " (TLS)";
  }
  return "unix://" + std::get<std::filesystem::path>(transport).string();
}

bool is_remote(const Transport& transport) {
  return std::holds_alternative<TlsEndpoint>(transport);
}

}  // namespace sandshim::engine
