#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandshim::install {

// What the host's engine offers, for the checks that apply only where it does.
struct HostSecurity {
  bool apparmor = false;
  bool selinux = false;
};

// One container-runtime check of the CIS Docker Benchmark (section 5, and 4.1 for the user).
struct ContainerCheck {
  std::string id;      // the benchmark's number: "5.4"
  std::string title;   // "not privileged"
  std::string status;  // pass | warn | fail | n/a
  std::string detail;  // what was seen
};

struct ContainerReport {
  std::string name;
  std::string id;
  std::vector<ContainerCheck> checks;
  bool passed() const;  // no check failed
};

// Applies every check to one element of `docker inspect` (or `podman inspect`) output.
ContainerReport check_container(const nlohmann::json& inspected, const HostSecurity& host);

// Applies them to the whole `inspect` output (a JSON array). Throws Fatal when it is not one.
std::vector<ContainerReport> check_containers(const std::string& inspect_output,
                                              const HostSecurity& host);

}  // namespace sandshim::install
