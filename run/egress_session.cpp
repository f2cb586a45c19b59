#include "run/egress_session.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "run/inside_binary.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_socket_name = "proxy.sock";

// Upper and lower case: curl reads only http_proxy in lower case, Python and Go read both.
constexpr const char* k_proxy_variables[] = {
    "HTTP_PROXY",  "HTTPS_PROXY", "ALL_PROXY",        "http_proxy",
    "https_proxy", "all_proxy",   "npm_config_proxy", "npm_config_https_proxy",
    "PIP_PROXY"};
constexpr const char* k_no_proxy_variables[] = {"NO_PROXY", "no_proxy"};

std::string proxy_url() {
  return "http://127.0.0.1:" + std::to_string(k_egress_port);
}

// /tmp/sandshim-egress-UID: made by this user, searchable but not listable by others, so a run's
// directory is reached only by whoever knows its random name (the run id).
fs::path egress_base() {
  return fs::path("/tmp") / ("sandshim-egress-" + std::to_string(::geteuid()));
}

void require_own_directory(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw Fatal("the egress directory " + quoted(dir.string()) +
                " is not a directory of this user that only it can write; remove it and retry");
  }
}

void make_directory(const fs::path& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    throw Fatal("cannot create the egress directory " + quoted(dir.string()) + ": " +
                std::strerror(errno));
  }
  require_own_directory(dir);
  ::chmod(dir.c_str(), mode);
}

// The run's directory belongs to the container's user: root hands it over; a broker, which runs
// as its own user, leaves it searchable and the socket open to whoever knows the run's name.
bool hand_over(const fs::path& dir, uid_t uid, gid_t gid) {
  if (::geteuid() == uid) {
    return false;
  }
  if (::geteuid() == 0) {
    if (::chown(dir.c_str(), uid, gid) != 0) {
      throw Fatal("cannot hand the egress directory to the container's user: " +
                  std::string(std::strerror(errno)));
    }
    return false;
  }
  ::chmod(dir.c_str(), 0711);
  return true;
}

egress::AllowList allow_list(const Policy& policy) {
  egress::AllowList list;
  (void)egress::parse_allow_rules(join(policy.network_allow, " "), list.rules);
  list.resolve = policy.network_resolve;
  return list;
}

}  // namespace

std::optional<EgressMount> egress_mount_for(const Policy& policy, const std::string& run_id) {
  if (policy.network != Network::allowlist) {
    return std::nullopt;
  }
  return EgressMount{egress_base() / run_id, locate_inside_binary(k_forwarder_name)};
}

std::vector<Mount> egress_mounts(const EgressMount& mount) {
  return {bind_mount(mount.host_dir, k_egress_inside_dir, false),
          bind_mount(mount.forwarder, k_forwarder_inside, true)};
}

std::vector<EnvVar> egress_environment() {
  std::vector<EnvVar> env;
  for (const char* name : k_proxy_variables) {
    env.push_back({name, proxy_url()});
  }
  for (const char* name : k_no_proxy_variables) {
    env.push_back({name, "localhost,127.0.0.1,::1"});
  }
  return env;
}

std::vector<std::string> egress_command(const std::vector<std::string>& command) {
  std::vector<std::string> argv = {k_forwarder_inside,
                                   "--listen",
                                   "127.0.0.1:" + std::to_string(k_egress_port),
                                   "--to",
                                   std::string(k_egress_inside_dir) + "/" + k_socket_name,
                                   "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

bool is_egress_variable(const std::string& name) {
  for (const char* variable : k_proxy_variables) {
    if (name == variable) {
      return true;
    }
  }
  return name == "NO_PROXY" || name == "no_proxy";
}

EgressSession EgressSession::open(const Policy& policy, const EgressMount& mount,
                                  uid_t container_uid, gid_t container_gid) {
  make_directory(mount.host_dir.parent_path(), 0711);
  if (::mkdir(mount.host_dir.c_str(), 0700) != 0) {
    throw Fatal("cannot create the egress directory " + quoted(mount.host_dir.string()) + ": " +
                std::strerror(errno));
  }
  try {
    bool open_socket = hand_over(mount.host_dir, container_uid, container_gid);
    auto proxy = egress::ProxyProcess::start(allow_list(policy), mount.host_dir / k_socket_name,
                                             open_socket);
    if (::geteuid() == 0) {
      ::chown((mount.host_dir / k_socket_name).c_str(), container_uid, container_gid);
    }
    return EgressSession(mount.host_dir, std::move(proxy));
  } catch (...) {
    std::error_code ec;
    fs::remove_all(mount.host_dir, ec);
    throw;
  }
}

EgressSession::EgressSession(fs::path dir, egress::ProxyProcess proxy)
    : m_dir(std::move(dir)), m_proxy(std::move(proxy)) {}

EgressSession::EgressSession(EgressSession&& other) noexcept
    : m_dir(std::move(other.m_dir)), m_proxy(std::move(other.m_proxy)) {
  other.m_dir.clear();
  other.m_proxy.reset();
}

EgressSession::~EgressSession() {
  m_proxy.reset();
  if (!m_dir.empty()) {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
}

std::vector<audit::ConnectionRecord> EgressSession::finish(const std::string& run_id) {
  std::vector<audit::ConnectionRecord> rows;
  if (!m_proxy) {
    return rows;
  }
  for (const auto& c : m_proxy->stop()) {
    rows.push_back({run_id, c.start_ms, c.method, c.name, c.port, c.address, c.allowed, c.reason,
                    c.bytes_up, c.bytes_down, c.duration_ms});
  }
  m_proxy.reset();
  return rows;
}

std::string egress_hint(const std::vector<audit::ConnectionRecord>& connections,
                        const std::string& run_id) {
  size_t refused = 0;
  for (const auto& c : connections) {
    refused += c.allowed ? 0 : 1;
  }
  std::string line =
      "this run's network is sandbox.network = allowlist: only the names in network.allow are "
      "reachable, through the proxy that HTTPS_PROXY names (no DNS, no other route)";
  if (refused > 0) {
    line += "; the proxy refused " + std::to_string(refused) + " of " +
            std::to_string(connections.size()) +
            " connection(s): see `sandshim audit connections --run " + run_id + "`";
  }
  return line;
}

}  // namespace sandshim::shim
