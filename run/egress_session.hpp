#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "audit/connection_record.hpp"
#include "egress/proxy.hpp"
#include "engine/create_spec.hpp"
#include "policy/policy.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// Inside the container: where the egress socket's directory and the forwarder are mounted, and
// the loopback port the proxy variables name.
inline constexpr const char* k_egress_inside_dir = "/sandshim-egress";
inline constexpr const char* k_forwarder_inside = "/sandshim-forward";
inline constexpr int k_egress_port = 3128;
inline constexpr const char* k_forwarder_name = "sandshim-forward";

// The mount of a run under sandbox.network = allowlist: the run's socket directory (not created
// yet) and the forwarder binary, which must exist (else Fatal, exit 125). Nullopt otherwise.
std::optional<EgressMount> egress_mount_for(const Policy& policy, const std::string& run_id);

// What an allowlist run adds to its container: the two mounts and the proxy variables (upper
// and lower case, npm's and pip's), and the command the container runs in place of the caller's.
std::vector<Mount> egress_mounts(const EgressMount& mount);
std::vector<EnvVar> egress_environment();
std::vector<std::string> egress_command(const std::vector<std::string>& command);
// Whether the proxy variables set `name`, so the caller's own value of it never passes.
bool is_egress_variable(const std::string& name);

// The host half of one allowlist run: the socket directory, reachable by the container's user
// only, and the filtering proxy serving it, from before the container starts to after it ends.
class EgressSession {
 public:
  // Creates the directory and starts the proxy; throws Fatal (nothing runs) when it cannot.
  static EgressSession open(const Policy& policy, const EgressMount& mount, uid_t container_uid,
                            gid_t container_gid);
  EgressSession(EgressSession&&) noexcept;
  EgressSession& operator=(EgressSession&&) = delete;
  EgressSession(const EgressSession&) = delete;
  EgressSession& operator=(const EgressSession&) = delete;
  ~EgressSession();

  // Ends the proxy and returns the run's connections for the audit.
  std::vector<audit::ConnectionRecord> finish(const std::string& run_id);

 private:
  EgressSession(std::filesystem::path dir, egress::ProxyProcess proxy);
  std::filesystem::path m_dir;
  std::optional<egress::ProxyProcess> m_proxy;
};

// The line after a failed allowlist run: what the sandbox could reach and what was refused.
std::string egress_hint(const std::vector<audit::ConnectionRecord>& connections,
                        const std::string& run_id);

}  // namespace sandshim::shim
