// `sandshim policy k8s`: the policy as agent-sandbox objects. Each hardening field is checked,
// and every object's shape against the fields the agent-sandbox CRDs (v1beta1: SandboxTemplate,
// SandboxWarmPool, from kubernetes-sigs/agent-sandbox helm/crds) and networking.k8s.io/v1 declare,
// written down here from reading them (no network in CI, their files are not vendored).

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "common/error.hpp"
#include "policy/policy.hpp"
#include "shim/k8s_manifests.hpp"
#include "test_hooks_support.hpp"
#include "test_shell_support.hpp"
#include "test_shim_support.hpp"

using namespace sandshim;
using namespace sandshim::shim;
using Json = nlohmann::ordered_json;

namespace {

Policy base_policy() {
  Policy policy;
  policy.images = default_images();
  return policy;
}

const Json& object_of(const Json& objects, const std::string& kind) {
  for (const auto& object : objects) {
    if (object["kind"] == kind) {
      return object;
    }
  }
  FAIL("no " << kind);
  return objects;
}

// The properties the schemas declare at each path this generator writes (a subset of PodSpec and
// Container: the fields it uses), the enums, and the required fields.
const std::map<std::string, std::set<std::string>> k_properties = {
    {"SandboxTemplate", {"apiVersion", "kind", "metadata", "spec"}},
    {"SandboxTemplate.spec",
     {"podTemplate", "volumeClaimTemplates", "service", "networkPolicy", "networkPolicyManagement",
      "envVarsInjectionPolicy", "volumeClaimTemplatesPolicy"}},
    {"SandboxTemplate.spec.podTemplate", {"spec", "metadata"}},
    {"SandboxTemplate.spec.podTemplate.metadata", {"labels", "annotations"}},
    {"SandboxTemplate.spec.networkPolicy", {"ingress", "egress"}},
    {"PodSpec",
     {"runtimeClassName", "automountServiceAccountToken", "enableServiceLinks", "hostNetwork",
      "hostPID", "hostIPC", "restartPolicy", "securityContext", "containers", "volumes",
      "activeDeadlineSeconds", "serviceAccountName", "nodeSelector", "tolerations"}},
    {"PodSecurityContext",
     {"runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile", "fsGroup",
      "supplementalGroups"}},
    {"Container",
     {"name", "image", "command", "args", "workingDir", "securityContext", "resources",
      "volumeMounts", "env"}},
    {"SecurityContext",
     {"runAsNonRoot", "runAsUser", "runAsGroup", "privileged", "allowPrivilegeEscalation",
      "readOnlyRootFilesystem", "capabilities", "seccompProfile"}},
    {"SandboxWarmPool", {"apiVersion", "kind", "metadata", "spec"}},
    {"SandboxWarmPool.spec", {"replicas", "sandboxTemplateRef", "updateStrategy"}},
    {"SandboxWarmPool.spec.sandboxTemplateRef", {"name"}},
    {"NetworkPolicy", {"apiVersion", "kind", "metadata", "spec"}},
    {"NetworkPolicy.spec", {"podSelector", "policyTypes", "ingress", "egress"}},
    {"metadata", {"name", "namespace", "labels", "annotations"}},
};

const std::map<std::string, std::set<std::string>> k_enums = {
    {"networkPolicyManagement", {"Managed", "Unmanaged"}},
    {"envVarsInjectionPolicy", {"Allowed", "Overrides", "Disallowed"}},
    {"volumeClaimTemplatesPolicy", {"Disallowed", "Allowed", "Overrides"}},
};

void check_properties(const Json& object, const std::string& path) {
  INFO(path);
  REQUIRE(object.is_object());
  const auto& allowed = k_properties.at(path);
  for (const auto& [key, value] : object.items()) {
    INFO(key);
    CHECK(allowed.count(key) == 1);
    auto allowed_values = k_enums.find(key);
    if (allowed_values != k_enums.end()) {
      CHECK(allowed_values->second.count(value.get<std::string>()) == 1);
    }
  }
}

void check_sandbox_template(const Json& tmpl) {
  check_properties(tmpl, "SandboxTemplate");
  CHECK(tmpl["apiVersion"] == "extensions.agents.x-k8s.io/v1beta1");
  check_properties(tmpl["metadata"], "metadata");
  check_properties(tmpl["spec"], "SandboxTemplate.spec");
  REQUIRE(tmpl["spec"].contains("podTemplate"));  // required by the schema
  const Json& pod = tmpl["spec"]["podTemplate"];
  check_properties(pod, "SandboxTemplate.spec.podTemplate");
  check_properties(pod["metadata"], "SandboxTemplate.spec.podTemplate.metadata");
  REQUIRE(pod.contains("spec"));
  check_properties(pod["spec"], "PodSpec");
  check_properties(pod["spec"]["securityContext"], "PodSecurityContext");
  REQUIRE(pod["spec"]["containers"].size() == 1);
  for (const auto& container : pod["spec"]["containers"]) {
    check_properties(container, "Container");
    CHECK(container.contains("name"));  // required
    check_properties(container["securityContext"], "SecurityContext");
  }
  if (tmpl["spec"].contains("networkPolicy")) {
    check_properties(tmpl["spec"]["networkPolicy"], "SandboxTemplate.spec.networkPolicy");
  }
}

// What the schema and Kubernetes' API say of the standalone NetworkPolicy.
void check_network_policy(const Json& policy) {
  check_properties(policy, "NetworkPolicy");
  CHECK(policy["apiVersion"] == "networking.k8s.io/v1");
  check_properties(policy["spec"], "NetworkPolicy.spec");
  CHECK(policy["spec"]["policyTypes"] == Json({"Ingress", "Egress"}));
  CHECK(policy["spec"]["ingress"] == Json::array());
}

bool has_pyyaml() {
  return std::system("python3 -c 'import yaml' >/dev/null 2>&1") == 0;
}

// YAML read back by PyYAML (install/deps.sh installs python3-yaml): the same objects as JSON.
Json yaml_as_json(const std::string& yaml) {
  sandshim::testing::TempDir dir;
  sandshim::testing::write_text(dir / "objects.yaml", yaml);
  std::string out = sandshim::test::output_of(
      "python3 -c 'import json, sys, yaml; "
      "print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))' " +
      (dir / "objects.yaml").string() + " 2>&1");
  INFO("PyYAML's answer: " << out);
  REQUIRE(Json::accept(out));
  return Json::parse(out);
}

}  // namespace

TEST_CASE("k8s manifests: the template's pod carries every hardening field", "[shim][k8s]") {
  Policy policy = base_policy();
  policy.memory_bytes = 256ULL << 20;
  policy.cpus = 0.5;
  policy.tmp_bytes = 32ULL << 20;
  Json objects = k8s_manifests(policy, ManifestOptions{});
  REQUIRE(objects.size() == 2);
  CHECK(objects[0]["kind"] == "NetworkPolicy");  // before any pod can exist
  const Json& tmpl = object_of(objects, "SandboxTemplate");
  check_sandbox_template(tmpl);
  const Json& pod = tmpl["spec"]["podTemplate"]["spec"];
  CHECK(pod["runtimeClassName"] == "gvisor");
  CHECK(pod["automountServiceAccountToken"] == false);
  CHECK(pod["securityContext"]["runAsNonRoot"] == true);
  CHECK(pod["securityContext"]["runAsUser"] == 65534);
  CHECK(pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault");
  const Json& container = pod["containers"][0];
  CHECK(container["image"] == "sandshim/python:bookworm");
  const Json& security = container["securityContext"];
  CHECK(security["runAsNonRoot"] == true);
  CHECK(security["runAsUser"] == 65534);
  CHECK(security["readOnlyRootFilesystem"] == true);
  CHECK(security["allowPrivilegeEscalation"] == false);
  CHECK(security["privileged"] == false);
  CHECK(security["capabilities"]["drop"] == Json({"ALL"}));
  CHECK(security["seccompProfile"]["type"] == "RuntimeDefault");
  CHECK(container["resources"]["limits"] == Json({{"cpu", "500m"}, {"memory", "256Mi"}}));
  CHECK(container["resources"]["requests"] == container["resources"]["limits"]);
  CHECK(pod["volumes"][0]["emptyDir"]["sizeLimit"] == "32Mi");
  CHECK(tmpl["spec"]["networkPolicyManagement"] == "Unmanaged");
  CHECK(tmpl["metadata"]["annotations"]["sandshim.dev/policy-digest"] == policy.digest());
  check_network_policy(object_of(objects, "NetworkPolicy"));
}

TEST_CASE("k8s manifests: egress follows sandbox.network", "[shim][k8s]") {
  Policy policy = base_policy();
  SECTION("none: no egress rule, everything denied") {
    Json np = object_of(k8s_manifests(policy, {}), "NetworkPolicy");
    check_network_policy(np);
    CHECK(np["spec"]["egress"] == Json::array());
  }
  SECTION("allowlist: the egress proxy only, which holds the names") {
    policy.network = Network::allowlist;
    policy.network_allow = {"pypi.org", "files.pythonhosted.org:443"};
    Json objects = k8s_manifests(policy, {});
    Json np = object_of(objects, "NetworkPolicy");
    check_network_policy(np);
    const Json& egress = np["spec"]["egress"];
    REQUIRE(egress.size() == 2);
    CHECK(egress[0]["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] ==
          "sandshim-egress");
    CHECK(egress[0]["ports"][0]["port"] == 3128);
    CHECK(egress[1]["ports"][0]["port"] == 53);
    const Json& tmpl = object_of(objects, "SandboxTemplate");
    CHECK(tmpl["metadata"]["annotations"]["sandshim.dev/network-allow"] ==
          "pypi.org,files.pythonhosted.org:443");
    const Json& container = tmpl["spec"]["podTemplate"]["spec"]["containers"][0];
    CHECK(container["env"][1] ==
          Json({{"name", "HTTPS_PROXY"}, {"value", "http://sandshim-egress:3128"}}));
  }
  SECTION("bridge: the internet, never the cluster's ranges or the metadata server") {
    policy.network = Network::bridge;
    Json np = object_of(k8s_manifests(policy, {}), "NetworkPolicy");
    const Json& except = np["spec"]["egress"][0]["to"][0]["ipBlock"]["except"];
    CHECK(std::find(except.begin(), except.end(), "169.254.0.0/16") != except.end());
    CHECK(std::find(except.begin(), except.end(), "10.0.0.0/8") != except.end());
  }
}

TEST_CASE("k8s manifests: a warm pool names its template", "[shim][k8s]") {
  ManifestOptions options;
  options.command = "node";
  options.namespace_name = "agents";
  options.warm_pool = 3;
  Json objects = k8s_manifests(base_policy(), options);
  REQUIRE(objects.size() == 3);
  const Json& pool = object_of(objects, "SandboxWarmPool");
  check_properties(pool, "SandboxWarmPool");
  check_properties(pool["spec"], "SandboxWarmPool.spec");
  check_properties(pool["spec"]["sandboxTemplateRef"], "SandboxWarmPool.spec.sandboxTemplateRef");
  CHECK(pool["spec"]["replicas"] == 3);
  CHECK(pool["spec"]["sandboxTemplateRef"]["name"] == "sandshim-node");
  CHECK(pool["metadata"]["namespace"] == "agents");
  CHECK(object_of(objects, "SandboxTemplate")["metadata"]["name"] == "sandshim-node");
}

TEST_CASE("k8s manifests: YAML documents read back as the same objects", "[shim][k8s]") {
  Policy policy = base_policy();
  policy.network = Network::allowlist;
  policy.network_allow = {"example.com"};
  policy.images["python"] = "registry.example/py:3.12\x7f\n";  // controls come out escaped
  ManifestOptions options;
  options.warm_pool = 1;
  Json objects = k8s_manifests(policy, options);
  std::string yaml = to_yaml_documents(objects);
  for (unsigned char c : yaml) {
    CHECK((c == '\n' || (c >= 0x20 && c != 0x7f)));
  }
  CHECK(yaml.rfind("---\napiVersion: \"networking.k8s.io/v1\"\n", 0) == 0);
  if (!has_pyyaml()) {
    WARN(
        "python3 with PyYAML is not here (install/deps.sh installs python3-yaml): the YAML was "
        "not read back");
    return;
  }
  CHECK(yaml_as_json(yaml) == Json::parse(objects.dump()));
}

TEST_CASE("k8s manifests: what a pod cannot run is refused", "[shim][k8s]") {
  Policy policy = base_policy();
  ManifestOptions options;
  options.command = "ruby";
  CHECK_THROWS_AS(k8s_manifests(policy, options), Fatal);
  policy.images["python"] = "host";
  CHECK_THROWS_AS(k8s_manifests(policy, {}), Fatal);
  CHECK(memory_quantity(1000) == "1000");
  CHECK(cpu_quantity(2) == "2");
  CHECK(cpu_quantity(0.25) == "250m");
}
