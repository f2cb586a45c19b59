#include "engine/endpoint.hpp"

namespace sandshim::engine {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_unix_scheme = "unix://";
constexpr const char* k_docker_socket = "/var/run/docker.sock";
constexpr const char* k_podman_root_socket = "/run/podman/podman.sock";

constexpr const char* k_ssh_scheme = "ssh://";

// A user or host name ssh cannot take for an option, of the characters names use.
bool plain_name(const std::string& name, const char* allowed) {
  return !name.empty() && name[0] != '-' && name.find_first_not_of(allowed) == std::string::npos;
}

bool valid_port(const std::string& port) {
  return !port.empty() && port.size() <= 5 &&
         port.find_first_not_of("0123456789") == std::string::npos && std::stoi(port) > 0 &&
         std::stoi(port) <= 65535;
}

// HOST, [V6ADDRESS], HOST:PORT or [V6ADDRESS]:PORT into the endpoint; false if malformed.
bool split_host_port(const std::string& text, SshEndpoint& ssh) {
  std::string port_part;
  if (text.starts_with("[")) {
    auto close = text.find(']');
    if (close == std::string::npos) {
      return false;
    }
    ssh.host = text.substr(1, close - 1);
    port_part = text.substr(close + 1);
    if (!plain_name(ssh.host, "0123456789abcdefABCDEF:.")) {
      return false;
    }
  } else {
    auto colon = text.find(':');
    ssh.host = text.substr(0, colon);
    port_part = colon == std::string::npos ? "" : text.substr(colon);
    if (!plain_name(ssh.host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")) {
      return false;
    }
  }
  if (port_part.empty()) {
    return true;
  }
  ssh.port = port_part.substr(1);
  return port_part[0] == ':' && valid_port(ssh.port);
}

}  // namespace

std::optional<SshEndpoint> ssh_endpoint(const std::string& endpoint, const std::string& identity,
                                        const std::string& known_hosts) {
  if (!endpoint.starts_with(k_ssh_scheme)) {
    return std::nullopt;
  }
  std::string rest = endpoint.substr(std::char_traits<char>::length(k_ssh_scheme));
  SshEndpoint ssh{"", "", "", identity, known_hosts};
  if (auto at = rest.find('@'); at != std::string::npos) {
    ssh.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (!plain_name(ssh.user,
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")) {
      return std::nullopt;
    }
  }
  if (!split_host_port(rest, ssh)) {
    return std::nullopt;
  }
  return ssh;
}

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
