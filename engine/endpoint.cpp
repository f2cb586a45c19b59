#include "engine/endpoint.hpp"

namespace sandshim::engine {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_unix_scheme = "unix://";
constexpr const char* k_docker_socket = "/var/run/docker.sock";
constexpr const char* k_podman_root_socket = "/run/podman/podman.sock";

}  // namespace

std::optional<TlsEndpoint> tls_endpoint(const std::string& endpoint, const std::string& cert_dir) {
  const std::string scheme = "tcp://";
  if (!endpoint.starts_with(scheme) || cert_dir.empty()) {
    return std::nullopt;
  }
  std::string rest = endpoint.substr(scheme.size());
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    rest.resize(slash);
  }
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
    return std::nullopt;
  }
  return TlsEndpoint{rest.substr(0, colon), rest.substr(colon + 1), cert_dir};
}

bool is_local_endpoint(const std::string& endpoint) {
  return endpoint.empty() || endpoint.starts_with(k_unix_scheme);
}

std::optional<fs::path> api_socket(const std::string& kind, const std::string& endpoint,
                                   bool rootless, const std::string& runtime_dir) {
  if (endpoint.starts_with(k_unix_scheme)) {
    return fs::path(endpoint.substr(std::char_traits<char>::length(k_unix_scheme)));
  }
  if (!endpoint.empty()) {
    return std::nullopt;
  }
  if (kind == "docker") {
    return fs::path(k_docker_socket);
  }
  if (!rootless) {
    return fs::path(k_podman_root_socket);
  }
  if (runtime_dir.empty()) {
    return std::nullopt;
  }
  return fs::path(runtime_dir) / "podman" / "podman.sock";
}

}  // namespace sandshim::engine
