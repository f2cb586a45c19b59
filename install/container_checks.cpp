#include "install/container_checks.hpp"

#include <algorithm>
#include <functional>

#include "common/error.hpp"
#include "common/strings.hpp"

namespace sandshim::install {

using nlohmann::json;

namespace {

struct Verdict {
  std::string status;
  std::string detail;
};

Verdict pass(std::string detail) {
  return {"pass", std::move(detail)};
}
Verdict fail(std::string detail) {
  return {"fail", std::move(detail)};
}
Verdict not_applicable(std::string detail) {
  return {"n/a", std::move(detail)};
}

// The inspected container, read defensively: engines leave fields out or null.
struct Inspected {
  const json& root;
  const HostSecurity& host;

  const json& at(const char* pointer) const {
    static const json k_null;
    json::json_pointer p(pointer);
    return root.contains(p) ? root.at(p) : k_null;
  }
  std::string text(const char* pointer) const {
    const json& value = at(pointer);
    return value.is_string() ? value.get<std::string>() : "";
  }
  int64_t number(const char* pointer) const {
    const json& value = at(pointer);
    return value.is_number() ? value.get<int64_t>() : 0;
  }
  bool flag(const char* pointer) const {
    const json& value = at(pointer);
    return value.is_boolean() && value.get<bool>();
  }
  std::vector<std::string> strings(const char* pointer) const {
    std::vector<std::string> result;
    for (const auto& item : at(pointer).is_array() ? at(pointer) : json::array()) {
      if (item.is_string()) {
        result.push_back(item.get<std::string>());
      }
    }
    return result;
  }
  // Host paths of bind mounts (and volumes, whose Source is a host path too).
  std::vector<std::string> mount_sources() const {
    std::vector<std::string> sources;
    for (const auto& mount : at("/Mounts").is_array() ? at("/Mounts") : json::array()) {
      if (mount.contains("Source") && mount["Source"].is_string()) {
        sources.push_back(mount["Source"].get<std::string>());
      }
    }
    return sources;
  }
  std::vector<std::string> security_options() const { return strings("/HostConfig/SecurityOpt"); }
};

bool shares_host(const std::string& mode) {
  return mode == "host";
}

Verdict namespace_not_shared(const Inspected& c, const char* pointer, const std::string& what) {
  std::string mode = c.text(pointer);
  return shares_host(mode) ? fail("shares the host's " + what + " namespace")
                           : pass(what + " mode " + (mode.empty() ? "default" : quoted(mode)));
}

Verdict non_root_user(const Inspected& c) {
  std::string user = c.text("/Config/User");
  std::string name = user.substr(0, user.find(':'));
  if (name.empty() || name == "0" || name == "root") {
    return fail("runs as root (user " + quoted(user) + ")");
  }
  return pass("user " + user);
}

Verdict apparmor_profile(const Inspected& c) {
  if (!c.host.apparmor) {
    return not_applicable("AppArmor is not enabled on the host");
  }
  std::string profile = c.text("/AppArmorProfile");
  if (profile.empty() || profile == "unconfined") {
    return fail("no AppArmor profile (" + (profile.empty() ? "none" : profile) + ")");
  }
  return pass("profile " + profile);
}

Verdict selinux_options(const Inspected& c) {
  if (!c.host.selinux) {
    return not_applicable("SELinux is not enabled on the host");
  }
  for (const auto& option : c.security_options()) {
    if (option == "label=disable" || option == "label:disable") {
      return fail("SELinux labelling disabled (" + option + ")");
    }
  }
  std::string label = c.text("/ProcessLabel");
  return label.empty() ? fail("no SELinux process label") : pass("label " + label);
}

Verdict capabilities_dropped(const Inspected& c) {
  auto added = c.strings("/HostConfig/CapAdd");
  auto dropped = c.strings("/HostConfig/CapDrop");
  bool all_dropped = std::any_of(dropped.begin(), dropped.end(), [](const std::string& cap) {
    return cap == "ALL" || cap == "all" || cap == "CAP_ALL";
  });
  if (!added.empty()) {
    return fail("adds " + join(added, ","));
  }
  return all_dropped ? pass("every capability dropped")
                     : fail("keeps the engine's default capabilities (no --cap-drop=ALL)");
}

Verdict not_privileged(const Inspected& c) {
  return c.flag("/HostConfig/Privileged") ? fail("privileged") : pass("not privileged");
}

bool is_under(const std::string& path, const std::string& dir) {
  return path == dir || path.starts_with(dir + "/");
}

Verdict no_sensitive_mounts(const Inspected& c) {
  static const char* const k_sensitive[] = {"/boot", "/dev", "/etc", "/lib",
                                            "/proc", "/sys", "/usr"};
  std::vector<std::string> found;
  for (const auto& source : c.mount_sources()) {
    bool sensitive =
        source == "/" || std::any_of(std::begin(k_sensitive), std::end(k_sensitive),
                                     [&](const char* dir) { return is_under(source, dir); });
    if (sensitive) {
      found.push_back(source);
    }
  }
  return found.empty() ? pass("none of /, /boot, /dev, /etc, /lib, /proc, /sys, /usr")
                       : fail("mounts " + join(found, ", "));
}

// Each published port as {host ip, host port}.
std::vector<std::pair<std::string, std::string>> published_ports(const Inspected& c) {
  std::vector<std::pair<std::string, std::string>> ports;
  const json& bindings = c.at("/HostConfig/PortBindings");
  if (!bindings.is_object()) {
    return ports;
  }
  for (const auto& [port, list] : bindings.items()) {
    for (const auto& binding : list.is_array() ? list : json::array()) {
      ports.emplace_back(binding.value("HostIp", ""), binding.value("HostPort", ""));
    }
  }
  return ports;
}

Verdict no_privileged_ports(const Inspected& c) {
  for (const auto& [ip, port] : published_ports(c)) {
    if (!port.empty() && port.find_first_not_of("0123456789") == std::string::npos &&
        port.size() < 6 && std::stoi(port) < 1024) {
      return fail("publishes host port " + port);
    }
  }
  return pass("no host port below 1024");
}

Verdict ports_on_specific_interface(const Inspected& c) {
  auto ports = published_ports(c);
  for (const auto& [ip, port] : ports) {
    if (ip.empty() || ip == "0.0.0.0" || ip == "::") {
      return fail("port " + port + " is published on every interface");
    }
  }
  return pass(ports.empty() ? "no published port" : "every port bound to one interface");
}

Verdict memory_limited(const Inspected& c) {
  int64_t memory = c.number("/HostConfig/Memory");
  return memory > 0 ? pass(std::to_string(memory) + " bytes") : fail("no memory limit");
}

Verdict cpu_limited(const Inspected& c) {
  int64_t nano = c.number("/HostConfig/NanoCpus");
  int64_t quota = c.number("/HostConfig/CpuQuota");
  int64_t shares = c.number("/HostConfig/CpuShares");
  if (nano > 0) {
    return pass(std::to_string(nano / 1'000'000) + " millicores");
  }
  if (quota > 0) {
    return pass("CFS quota " + std::to_string(quota));
  }
  if (shares > 0 && shares != 1024) {
    return pass("CPU shares " + std::to_string(shares));
  }
  return fail("no CPU limit or priority");
}

Verdict read_only_root(const Inspected& c) {
  return c.flag("/HostConfig/ReadonlyRootfs") ? pass("read-only")
                                              : fail("the root file system is writable");
}

Verdict restart_policy(const Inspected& c) {
  std::string name = c.text("/HostConfig/RestartPolicy/Name");
  int64_t retries = c.number("/HostConfig/RestartPolicy/MaximumRetryCount");
  if (name.empty() || name == "no") {
    return pass("no restart");
  }
  if (name == "on-failure" && retries > 0 && retries <= 5) {
    return pass("on-failure:" + std::to_string(retries));
  }
  return fail("restart policy " + name +
              (name == "on-failure" ? ":" + std::to_string(retries) : std::string()));
}

Verdict no_host_devices(const Inspected& c) {
  const json& devices = c.at("/HostConfig/Devices");
  std::vector<std::string> found;
  for (const auto& device : devices.is_array() ? devices : json::array()) {
    found.push_back(device.value("PathOnHost", "?"));
  }
  return found.empty() ? pass("no host device") : fail("exposes " + join(found, ", "));
}

Verdict ulimits_set(const Inspected& c) {
  const json& ulimits = c.at("/HostConfig/Ulimits");
  std::vector<std::string> names;
  for (const auto& limit : ulimits.is_array() ? ulimits : json::array()) {
    names.push_back(limit.value("Name", "?"));
  }
  return names.empty() ? Verdict{"warn", "the engine's default ulimits"}
                       : pass("sets " + join(names, ","));
}

Verdict propagation_not_shared(const Inspected& c) {
  const json& mounts = c.at("/Mounts");
  for (const auto& mount : mounts.is_array() ? mounts : json::array()) {
    std::string propagation = mount.value("Propagation", "");
    if (propagation == "shared" || propagation == "rshared") {
      return fail(mount.value("Destination", "?") + " has " + propagation + " propagation");
    }
  }
  return pass("no shared propagation");
}

Verdict seccomp_confined(const Inspected& c) {
  for (const auto& option : c.security_options()) {
    if (option == "seccomp=unconfined" || option == "seccomp:unconfined") {
      return fail("seccomp unconfined");
    }
  }
  return pass("the engine's profile or a custom one");
}

Verdict default_cgroup_parent(const Inspected& c) {
  std::string parent = c.text("/HostConfig/CgroupParent");
  return parent.empty() ? pass("default") : Verdict{"warn", "cgroup parent " + quoted(parent)};
}

Verdict no_new_privileges(const Inspected& c) {
  for (const auto& option : c.security_options()) {
    if (option == "no-new-privileges" || option == "no-new-privileges:true" ||
        option == "no-new-privileges=true") {
      return pass("set");
    }
  }
  return fail("setuid binaries can raise privileges (no no-new-privileges)");
}

Verdict pids_limited(const Inspected& c) {
  int64_t pids = c.number("/HostConfig/PidsLimit");
  return pids > 0 ? pass(std::to_string(pids)) : fail("no pids limit");
}

Verdict not_default_bridge(const Inspected& c) {
  std::string mode = c.text("/HostConfig/NetworkMode");
  return mode == "bridge" || mode == "default" ? fail("on the default bridge")
                                               : pass("network " + quoted(mode));
}

Verdict no_engine_socket(const Inspected& c) {
  for (const auto& source : c.mount_sources()) {
    std::string name = source.substr(source.rfind('/') + 1);
    if (name == "docker.sock" || name == "podman.sock" || name == "containerd.sock") {
      return fail("mounts the engine socket " + source);
    }
  }
  return pass("no engine socket mounted");
}

struct CheckSpec {
  const char* id;
  const char* title;
  std::function<Verdict(const Inspected&)> check;
};

// The CIS Docker Benchmark checks that apply to one container, by their section number.
const std::vector<CheckSpec> k_check_table = {
    {"4.1", "non-root user", non_root_user},
    {"5.1", "AppArmor profile", apparmor_profile},
    {"5.2", "SELinux options", selinux_options},
    {"5.3", "capabilities restricted", capabilities_dropped},
    {"5.4", "not privileged", not_privileged},
    {"5.5", "no sensitive host directory", no_sensitive_mounts},
    {"5.7", "no privileged port", no_privileged_ports},
    {"5.9", "host network not shared",
     [](const Inspected& c) {
       return namespace_not_shared(c, "/HostConfig/NetworkMode", "network");
     }},
    {"5.10", "memory limited", memory_limited},
    {"5.11", "CPU limited", cpu_limited},
    {"5.12", "read-only root", read_only_root},
    {"5.13", "ports on one interface", ports_on_specific_interface},
    {"5.14", "restart policy", restart_policy},
    {"5.15", "host PID not shared",
     [](const Inspected& c) { return namespace_not_shared(c, "/HostConfig/PidMode", "PID"); }},
    {"5.16", "host IPC not shared",
     [](const Inspected& c) { return namespace_not_shared(c, "/HostConfig/IpcMode", "IPC"); }},
    {"5.17", "no host device", no_host_devices},
    {"5.18", "ulimits set", ulimits_set},
    {"5.19", "mount propagation", propagation_not_shared},
    {"5.20", "host UTS not shared",
     [](const Inspected& c) { return namespace_not_shared(c, "/HostConfig/UTSMode", "UTS"); }},
    {"5.21", "seccomp not unconfined", seccomp_confined},
    {"5.24", "cgroup parent", default_cgroup_parent},
    {"5.25", "no-new-privileges", no_new_privileges},
    {"5.28", "pids limited", pids_limited},
    {"5.29", "not on the default bridge", not_default_bridge},
    {"5.30", "host user namespace not shared",
     [](const Inspected& c) { return namespace_not_shared(c, "/HostConfig/UsernsMode", "user"); }},
    {"5.31", "engine socket not mounted", no_engine_socket},
};

}  // namespace

bool ContainerReport::passed() const {
  return std::none_of(checks.begin(), checks.end(),
                      [](const ContainerCheck& check) { return check.status == "fail"; });
}

ContainerReport check_container(const json& inspected, const HostSecurity& host) {
  Inspected container{inspected, host};
  ContainerReport report;
  report.name = container.text("/Name");
  if (report.name.starts_with("/")) {
    report.name.erase(0, 1);
  }
  report.id = container.text("/Id").substr(0, 12);
  for (const auto& spec : k_check_table) {
    Verdict verdict = spec.check(container);
    report.checks.push_back({spec.id, spec.title, verdict.status, verdict.detail});
  }
  return report;
}

std::vector<ContainerReport> check_containers(const std::string& inspect_output,
                                              const HostSecurity& host) {
  json parsed = json::parse(inspect_output, nullptr, false);
  if (!parsed.is_array()) {
    throw Fatal("cannot read the engine's `inspect` output: not a JSON array");
  }
  std::vector<ContainerReport> reports;
  for (const auto& container : parsed) {
    if (container.is_object()) {
      reports.push_back(check_container(container, host));
    }
  }
  return reports;
}

}  // namespace sandshim::install
