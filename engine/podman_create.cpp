// podman's libpod create body (its SpecGenerator): the compat create cannot carry
// --read-only-tmpfs=false (it always mounts writable tmpfs on /run and /var/tmp), the init's
// path, --cgroups=enabled or a bind mount's noexec, so podman's runs create through libpod.
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/create_body.hpp"
#include "engine/engine_create.hpp"

namespace sandshim::shim {

namespace {

using create_body::cannot;
using create_body::Draft;
using create_body::Problem;
using nlohmann::json;

// --rm: the API client removes the container once its wait returned, not podman's own removal,
// which may remove it before the wait (sent after start, see engine_run.cpp) is answered.
Problem podman_lifecycle(const CreateSpec& spec, Draft& draft) {
  draft.config["name"] = spec.name;
  if (!spec.hostname.empty()) {
    draft.config["hostname"] = spec.hostname;
  }
  for (const auto& [label, value] : spec.labels) {
    draft.config["labels"][label] = value;
  }
  if (spec.init) {
    draft.config["init"] = true;
  }
  if (!spec.init_path.empty()) {
    draft.config["init_path"] = spec.init_path;
  }
  if (!spec.log_driver.empty()) {
    draft.config["log_configuration"] = {{"driver", spec.log_driver}};
  }
  if (!spec.runtime.empty() || spec.detach) {
    return cannot("--runtime or --detach", "podman's client names its runtime before `run`");
  }
  return std::nullopt;
}

Problem podman_privileges(const CreateSpec& spec, Draft& draft) {
  if (!spec.network.empty()) {
    if (spec.network != "none" && spec.network != "bridge") {
      return cannot("--network=" + spec.network, "a network other than none or bridge");
    }
    draft.config["netns"] = {{"nsmode", spec.network}};
  }
  for (const auto& cap : spec.cap_drop) {
    draft.config["cap_drop"].push_back(cap);
  }
  if (spec.no_new_privileges) {
    draft.config["no_new_privileges"] = true;
  }
  if (!spec.seccomp_profile.empty()) {
    if (!draft.inputs->read_file(spec.seccomp_profile.string())) {
      return cannot("--security-opt=seccomp=" + spec.seccomp_profile.string(),
                    "an unreadable profile");
    }
    draft.config["seccomp_profile_path"] = spec.seccomp_profile.string();  // the service reads it
  }
  if (!spec.user.empty()) {
    draft.config["user"] = spec.user;
  }
  for (const auto& group : spec.group_add) {
    draft.config["groups"].push_back(group);
  }
  return std::nullopt;
}

// A bind as an OCI mount: rbind, ro, and noexec, nosuid or nodev; nullopt for another option.
std::optional<json> spec_mount(const Mount& mount) {
  if (mount.kind == Mount::Kind::tmpfs) {
    return json{{"destination", mount.target.string()},
                {"type", "tmpfs"},
                {"source", "tmpfs"},
                {"options", mount.options}};
  }
  json options = json::array({"rbind"});
  if (mount.read_only) {
    options.push_back("ro");
  }
  for (const auto& option : mount.options) {
    if (option != "noexec" && option != "nosuid" && option != "nodev") {
      return std::nullopt;
    }
    options.push_back(option);
  }
  return json{{"destination", mount.target.string()},
              {"type", "bind"},
              {"source", mount.source.string()},
              {"options", options}};
}

// --read-only-tmpfs=false is podman 4.3's libpod default; newer services read the field.
Problem podman_filesystem(const CreateSpec& spec, Draft& draft) {
  if (spec.read_only_rootfs) {
    draft.config["read_only_filesystem"] = true;
  }
  if (spec.read_only_tmpfs) {
    if (*spec.read_only_tmpfs) {
      return cannot("--read-only-tmpfs=true", "writable tmpfs on a read-only root");
    }
    draft.config["read_write_tmpfs"] = false;
  }
  for (const Mount& mount : spec.mounts) {
    auto entry = spec_mount(mount);
    if (!entry) {
      return cannot("--mount=…," + create_body::joined(mount.options), "no API bind option");
    }
    draft.config["mounts"].push_back(*entry);
  }
  create_body::set_if(draft.config, "shm_size", spec.shm_bytes);
  if (!spec.workdir.empty()) {
    draft.config["work_dir"] = spec.workdir;
  }
  return std::nullopt;
}

void set_limit(Draft& draft, const char* group, const char* key,
               const std::optional<int64_t>& value) {
  if (value) {
    draft.config["resource_limits"][group][key] = *value;
  }
}

// `--cpus` as podman's client takes it: a quota over a 100 ms period.
Problem podman_limits(const CreateSpec& spec, Draft& draft) {
  if (!spec.cgroups.empty() && spec.cgroups != "enabled") {
    return cannot("--cgroups=" + spec.cgroups, "a cgroups mode other than enabled");
  }
  if (!spec.cgroups.empty()) {
    draft.config["cgroups_mode"] = spec.cgroups;
  }
  set_limit(draft, "memory", "limit", spec.memory_bytes);
  set_limit(draft, "memory", "swap", spec.memory_swap_bytes);
  if (spec.cpus) {
    constexpr int64_t k_period_us = 100000;
    set_limit(draft, "cpu", "period", k_period_us);
    set_limit(draft, "cpu", "quota",
              std::llround(create_body::cpus_given(*spec.cpus) * k_period_us));
  }
  if (!spec.cpuset.empty()) {
    draft.config["resource_limits"]["cpu"]["cpus"] = spec.cpuset;
  }
  set_limit(draft, "pids", "limit", spec.pids_limit);
  for (const Ulimit& limit : spec.ulimits) {
    draft.config["r_limits"].push_back(
        {{"type", limit.name}, {"soft", limit.soft}, {"hard", limit.hard}});
  }
  return std::nullopt;
}

Problem podman_process(const CreateSpec& spec, Draft& draft) {
  for (const EnvVar& var : spec.env) {
    if (auto entry = create_body::resolved(var, draft.inputs->client_env)) {
      size_t eq = entry->find('=');
      draft.config["env"][entry->substr(0, eq)] = entry->substr(eq + 1);
    }
  }
  for (const auto& name : spec.unset_env) {
    draft.config["unsetenv"].push_back(name);
  }
  if (spec.interactive) {
    draft.config["stdin"] = true;
  }
  if (spec.tty) {
    draft.config["terminal"] = true;
  }
  create_body::set_program(draft.config, spec, {"entrypoint", "image", "command"});
  return std::nullopt;
}

constexpr create_body::Section k_podman_sections[] = {
    podman_lifecycle, podman_privileges, podman_filesystem, podman_limits, podman_process};

}  // namespace

ApiCreate podman_create(const CreateSpec& spec, const CreateInputs& inputs) {
  ApiCreate create = create_body::serialize(spec, inputs, json::object(), k_podman_sections);
  if (create.request) {
    create.request->libpod = true;
    create.request->auto_remove = false;
  }
  return create;
}

}  // namespace sandshim::shim
