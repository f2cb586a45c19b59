#include "shim/k8s_manifests.hpp"

#include <cmath>

#include "common/error.hpp"
#include "common/escape.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

using Json = nlohmann::ordered_json;

namespace {

constexpr const char* k_sandbox_api = "extensions.agents.x-k8s.io/v1beta1";
constexpr int64_t k_nobody =
    65534;  // the user a sandshim container runs as when the caller is root
constexpr const char* k_name_label = "app.kubernetes.io/name";
constexpr const char* k_egress_proxy = "sandshim-egress";  // the allowlist proxy's pods and Service
constexpr int k_proxy_port = 3128;

Json metadata(const std::string& name, const ManifestOptions& options) {
  Json meta = {{"name", name}};
  if (!options.namespace_name.empty()) {
    meta["namespace"] = options.namespace_name;
  }
  meta["labels"] = {{"app.kubernetes.io/managed-by", "sandshim"}, {k_name_label, name}};
  return meta;
}

// The same confinement as hardening.cpp's steps: no privilege, no capability, a read-only root.
Json container_security() {
  return {{"runAsNonRoot", true},
          {"runAsUser", k_nobody},
          {"runAsGroup", k_nobody},
          {"privileged", false},
          {"allowPrivilegeEscalation", false},
          {"readOnlyRootFilesystem", true},
          {"capabilities", {{"drop", {"ALL"}}}},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

Json resources(const Policy& policy) {
  Json limits = {{"cpu", cpu_quantity(policy.cpus)},
                 {"memory", memory_quantity(policy.memory_bytes)}};
  return {{"limits", limits}, {"requests", limits}};  // equal: the Guaranteed class, no overcommit
}

// The proxy's address for allowlist mode: the only place the sandbox may connect to.
Json proxy_environment() {
  std::string proxy = "http://" + std::string(k_egress_proxy) + ":" + std::to_string(k_proxy_port);
  Json env = Json::array();
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) {
    env.push_back({{"name", name}, {"value", proxy}});
  }
  return env;
}

Json sandbox_container(const Policy& policy, const std::string& image) {
  Json container = {{"name", "sandbox"},
                    {"image", image},
                    {"command", {"sleep", "infinity"}},  // runs come in by exec, one per claim
                    {"workingDir", "/workspace"},
                    {"securityContext", container_security()},
                    {"resources", resources(policy)},
                    {"volumeMounts",
                     {{{"name", "tmp"}, {"mountPath", "/tmp"}},
                      {{"name", "workspace"}, {"mountPath", "/workspace"}}}}};
  if (policy.network == Network::allowlist) {
    container["env"] = proxy_environment();
  }
  return container;
}

Json pod_spec(const Policy& policy, const std::string& image, const ManifestOptions& options) {
  Json tmp = {{"medium", "Memory"}, {"sizeLimit", memory_quantity(policy.tmp_bytes)}};
  return {{"runtimeClassName", options.runtime_class},
          {"automountServiceAccountToken", false},
          {"enableServiceLinks", false},
          {"hostNetwork", false},
          {"hostPID", false},
          {"hostIPC", false},
          {"restartPolicy", "Never"},
          {"securityContext",
           {{"runAsNonRoot", true},
            {"runAsUser", k_nobody},
            {"runAsGroup", k_nobody},
            {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
          {"containers", {sandbox_container(policy, image)}},
          {"volumes",
           {{{"name", "tmp"}, {"emptyDir", tmp}},
            {{"name", "workspace"}, {"emptyDir", Json::object()}}}}};
}

Json dns_rule() {
  return {
      {"to",
       {{{"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", "kube-system"}}}}},
         {"podSelector", {{"matchLabels", {{"k8s-app", "kube-dns"}}}}}}}},
      {"ports", {{{"protocol", "UDP"}, {"port", 53}}, {{"protocol", "TCP"}, {"port", 53}}}}};
}

// network = none: no rule (deny all); allowlist: the egress proxy only (NetworkPolicy cannot name
// hosts, the proxy holds the allowlist); bridge: the internet, not the cluster or the metadata
// server.
Json egress_rules(const Policy& policy) {
  Json rules = Json::array();
  if (policy.network == Network::allowlist) {
    rules.push_back(
        {{"to", {{{"podSelector", {{"matchLabels", {{k_name_label, k_egress_proxy}}}}}}}},
         {"ports", {{{"protocol", "TCP"}, {"port", k_proxy_port}}}}});
    rules.push_back(dns_rule());
  } else if (policy.network == Network::bridge) {
    rules.push_back({{"to",
                      {{{"ipBlock",
                         {{"cidr", "0.0.0.0/0"},
                          {"except",
                           {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
                            "169.254.0.0/16"}}}}}}}});
    rules.push_back(dns_rule());
  }
  return rules;
}

Json annotations(const Policy& policy) {
  Json notes = {{"sandshim.dev/policy-digest", policy.digest()},
                {"sandshim.dev/limits", policy.limits_summary()},
                {"sandshim.dev/pids",
                 std::to_string(policy.pids) + " (no pod field: set the kubelet's podPidsLimit)"},
                {"sandshim.dev/timeout-ms", std::to_string(policy.timeout_ms)}};
  if (policy.network == Network::allowlist) {
    notes["sandshim.dev/network-allow"] = join(policy.network_allow, ",");
  }
  return notes;
}

Json network_policy(const Policy& policy, const std::string& name, const ManifestOptions& options) {
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", metadata(name, options)},
          {"spec",
           {{"podSelector", {{"matchLabels", {{k_name_label, name}}}}},
            {"policyTypes", {"Ingress", "Egress"}},
            {"ingress", Json::array()},
            {"egress", egress_rules(policy)}}}};
}

Json sandbox_template(const Policy& policy, const std::string& name, const std::string& image,
                      const ManifestOptions& options) {
  Json meta = metadata(name, options);
  meta["annotations"] = annotations(policy);
  return {{"apiVersion", k_sandbox_api},
          {"kind", "SandboxTemplate"},
          {"metadata", meta},
          {"spec",
           {{"networkPolicyManagement", "Unmanaged"},  // the NetworkPolicy above is the one
            {"envVarsInjectionPolicy", "Disallowed"},
            {"volumeClaimTemplatesPolicy", "Disallowed"},
            {"podTemplate",
             {{"metadata",
               {{"labels", {{k_name_label, name}, {"app.kubernetes.io/managed-by", "sandshim"}}}}},
              {"spec", pod_spec(policy, image, options)}}}}}};
}

Json warm_pool(const std::string& name, const ManifestOptions& options) {
  return {{"apiVersion", k_sandbox_api},
          {"kind", "SandboxWarmPool"},
          {"metadata", metadata(name, options)},
          {"spec", {{"replicas", options.warm_pool}, {"sandboxTemplateRef", {{"name", name}}}}}};
}

bool plain_key(const std::string& key) {
  return !key.empty() && std::isalpha(static_cast<unsigned char>(key.front())) != 0 &&
         key.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") ==
             std::string::npos;
}

std::string scalar(const Json& value) {
  if (value.is_object()) {
    return "{}";
  }
  if (value.is_array()) {
    return "[]";
  }
  return escape_json_controls(value.dump(-1, ' ', true));  // YAML reads JSON's \u escapes
}

bool is_block(const Json& value) {
  return (value.is_object() || value.is_array()) && !value.empty();
}

void emit(const Json& value, size_t indent, std::string& out);

void emit_item(const Json& item, size_t indent, std::string& out) {
  if (!is_block(item)) {
    out += std::string(indent, ' ') + "- " + scalar(item) + "\n";
    return;
  }
  std::string block;
  emit(item, indent + 2, block);
  out += std::string(indent, ' ') + "- " + block.substr(indent + 2);
}

void emit(const Json& value, size_t indent, std::string& out) {
  if (value.is_array()) {
    for (const auto& item : value) {
      emit_item(item, indent, out);
    }
    return;
  }
  for (const auto& [key, item] : value.items()) {
    out += std::string(indent, ' ') + (plain_key(key) ? key : scalar(Json(key))) + ":";
    if (is_block(item)) {
      out += "\n";
      emit(item, indent + 2, out);
    } else {
      out += " " + scalar(item) + "\n";
    }
  }
}

}  // namespace

std::string memory_quantity(uint64_t bytes) {
  constexpr uint64_t k_mib = 1ULL << 20;
  return bytes % k_mib == 0 ? std::to_string(bytes / k_mib) + "Mi" : std::to_string(bytes);
}

std::string cpu_quantity(double cpus) {
  auto millicores = static_cast<int64_t>(std::llround(cpus * 1000));
  return millicores % 1000 == 0 ? std::to_string(millicores / 1000)
                                : std::to_string(millicores) + "m";
}

Json k8s_manifests(const Policy& policy, const ManifestOptions& options) {
  auto image = policy.images.find(options.command);
  if (image == policy.images.end()) {
    throw Fatal("no image for " + quoted(options.command) +
                    " in the policy (images.COMMAND); see `sandshim images`",
                exit_code::k_usage);
  }
  if (image->second == "host") {
    throw Fatal("images." + options.command +
                    " = host runs the host's interpreter: a pod cannot; name an image for it",
                exit_code::k_usage);
  }
  std::string name = options.name.empty() ? "sandshim-" + options.command : options.name;
  Json objects = {network_policy(policy, name, options),
                  sandbox_template(policy, name, image->second, options)};
  if (options.warm_pool > 0) {
    objects.push_back(warm_pool(name, options));
  }
  return objects;
}

std::string to_yaml_documents(const Json& objects) {
  std::string out;
  for (const auto& object : objects) {
    out += "---\n";
    emit(object, 0, out);
  }
  return out;
}

}  // namespace sandshim::shim
