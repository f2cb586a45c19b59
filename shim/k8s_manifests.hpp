#pragma once

// The effective policy as Kubernetes objects for kubernetes-sigs/agent-sandbox
// (docs/kubernetes.md): a SandboxTemplate whose pod carries the same hardening as a sandshim
// container, a NetworkPolicy for its egress, and optionally a SandboxWarmPool. Printed, never
// applied.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/policy.hpp"

namespace sandshim::shim {

struct ManifestOptions {
  std::string command = "python";  // whose image (images.COMMAND) the template runs
  std::string name;                // object names; empty: sandshim-COMMAND
  std::string namespace_name;      // metadata.namespace; empty: none (kubectl's -n decides)
  std::string runtime_class = "gvisor";
  int64_t warm_pool = 0;  // > 0: a SandboxWarmPool of that many sandboxes
};

// The objects, in apply order (NetworkPolicy first, so no pod ever runs without it). A policy
// the objects cannot express (an unknown command) is a Fatal with exit 2.
nlohmann::ordered_json k8s_manifests(const Policy& policy, const ManifestOptions& options);

// The objects as YAML documents separated by `---`: block style, every string a JSON-quoted
// scalar (so no value is read back as another type), for `kubectl apply -f -`.
std::string to_yaml_documents(const nlohmann::ordered_json& objects);

// Kubernetes quantities: bytes as Mi (or plain bytes when not a whole MiB), CPUs as millicores.
std::string memory_quantity(uint64_t bytes);
std::string cpu_quantity(double cpus);

}  // namespace sandshim::shim
