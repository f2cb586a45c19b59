#include "engine/engine_create.hpp"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine/create_body.hpp"

namespace sandshim::shim {

namespace {

using create_body::cannot;
using create_body::Draft;
using create_body::Problem;
using nlohmann::json;

// What `docker run` sets for a container it attaches to, before any flag.
json base_config() {
  return {{"AttachStdin", false}, {"AttachStdout", true},     {"AttachStderr", true},
          {"OpenStdin", false},   {"StdinOnce", false},       {"Tty", false},
          {"Env", json::array()}, {"Labels", json::object()}, {"HostConfig", json::object()}};
}

// The fields only podman's client takes, which docker's create has no form of.
Problem docker_refuses(const CreateSpec& spec) {
  if (!spec.init_path.empty()) {
    return cannot("--init-path", "podman's");
  }
  if (spec.read_only_tmpfs || !spec.cgroups.empty() || !spec.unset_env.empty()) {
    return cannot("--read-only-tmpfs, --cgroups or --unsetenv", "podman's");
  }
  if (!spec.runtime_flags.empty() || spec.detach) {
    return cannot("--runtime-flag or --detach", "not a run over the API");
  }
  return std::nullopt;
}

Problem docker_lifecycle(const CreateSpec& spec, Draft& draft) {
  json& host = draft.host();
  if (!spec.hostname.empty()) {
    draft.config["Hostname"] = spec.hostname;
  }
  for (const auto& [label, value] : spec.labels) {
    draft.config["Labels"][label] = value;
  }
  if (spec.auto_remove) {
    host["AutoRemove"] = draft.request.auto_remove = true;
  }
  if (spec.init) {
    host["Init"] = true;
  }
  if (!spec.log_driver.empty()) {
    host["LogConfig"] = {{"Type", spec.log_driver}, {"Config", json::object()}};
  }
  if (!spec.network.empty()) {
    host["NetworkMode"] = spec.network;
  }
  if (!spec.runtime.empty()) {
    host["Runtime"] = spec.runtime;
  }
  return docker_refuses(spec);
}

// seccomp=PATH becomes seccomp=<the profile's JSON, compact>, as the client sends it.
Problem docker_privileges(const CreateSpec& spec, Draft& draft) {
  json& host = draft.host();
  for (const auto& cap : spec.cap_drop) {
    host["CapDrop"].push_back(cap);
  }
  if (spec.no_new_privileges) {
    host["SecurityOpt"].push_back("no-new-privileges:true");
  }
  if (!spec.seccomp_profile.empty()) {
    auto content = draft.inputs->read_file(spec.seccomp_profile.string());
    json profile = content ? json::parse(*content, nullptr, false) : json();
    if (profile.is_discarded() || !profile.is_object()) {
      return cannot("--security-opt=seccomp=" + spec.seccomp_profile.string(),
                    "the seccomp profile cannot be read as JSON");
    }
    host["SecurityOpt"].push_back("seccomp=" + profile.dump());
  }
  if (!spec.user.empty()) {
    draft.config["User"] = spec.user;
  }
  for (const auto& group : spec.group_add) {
    host["GroupAdd"].push_back(group);
  }
  return std::nullopt;
}

// Binds as Mounts (docker's API binds take no noexec, nosuid or nodev), tmpfs as Tmpfs.
Problem docker_filesystem(const CreateSpec& spec, Draft& draft) {
  json& host = draft.host();
  if (spec.read_only_rootfs) {
    host["ReadonlyRootfs"] = true;
  }
  for (const Mount& mount : spec.mounts) {
    if (mount.kind == Mount::Kind::tmpfs) {
      host["Tmpfs"][mount.target.string()] = create_body::joined(mount.options);
      continue;
    }
    if (!mount.options.empty()) {
      return cannot("--mount=…," + create_body::joined(mount.options), "no API bind option");
    }
    host["Mounts"].push_back({{"Type", "bind"},
                              {"Source", mount.source.string()},
                              {"Target", mount.target.string()},
                              {"ReadOnly", mount.read_only}});
  }
  if (spec.shm_bytes) {
    host["ShmSize"] = *spec.shm_bytes;
  }
  if (!spec.workdir.empty()) {
    draft.config["WorkingDir"] = spec.workdir;
  }
  return std::nullopt;
}

// `--cpus` as the client takes it: nano-CPUs, whole.
Problem docker_limits(const CreateSpec& spec, Draft& draft) {
  json& host = draft.host();
  create_body::set_if(host, "Memory", spec.memory_bytes);
  create_body::set_if(host, "MemorySwap", spec.memory_swap_bytes);
  if (spec.cpus) {
    host["NanoCpus"] = std::llround(create_body::cpus_given(*spec.cpus) * 1e9);
  }
  if (!spec.cpuset.empty()) {
    host["CpusetCpus"] = spec.cpuset;
  }
  create_body::set_if(host, "PidsLimit", spec.pids_limit);
  for (const Ulimit& limit : spec.ulimits) {
    host["Ulimits"].push_back({{"Name", limit.name}, {"Soft", limit.soft}, {"Hard", limit.hard}});
  }
  return std::nullopt;
}

Problem docker_process(const CreateSpec& spec, Draft& draft) {
  for (const EnvVar& var : spec.env) {
    if (auto entry = create_body::resolved(var, draft.inputs->client_env)) {
      draft.config["Env"].push_back(*entry);
    }
  }
  if (spec.interactive) {
    draft.config["AttachStdin"] = draft.config["OpenStdin"] = draft.config["StdinOnce"] = true;
  }
  draft.config["Tty"] = spec.tty;
  create_body::set_program(draft.config, spec, {"Entrypoint", "Image", "Cmd"});
  return std::nullopt;
}

constexpr create_body::Section k_docker_sections[] = {
    docker_lifecycle, docker_privileges, docker_filesystem, docker_limits, docker_process};

}  // namespace

ApiCreate docker_create(const CreateSpec& spec, const CreateInputs& inputs) {
  return create_body::serialize(spec, inputs, base_config(), k_docker_sections);
}

ApiCreate api_create(const CreateSpec& spec, bool podman, const CreateInputs& inputs) {
  return podman ? podman_create(spec, inputs) : docker_create(spec, inputs);
}

}  // namespace sandshim::shim
