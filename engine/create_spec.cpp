#include "engine/create_spec.hpp"

#include <sstream>

#include "engine/create_body.hpp"
#include "engine/engine_names.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

namespace {

using Args = std::vector<std::string>;

std::string flag(const std::string& name, const std::string& value) {
  return "--" + name + "=" + value;
}

void add_if(Args& args, const std::string& name, const std::string& value) {
  if (!value.empty()) {
    args.push_back(flag(name, value));
  }
}

void add_if(Args& args, const std::string& name, const std::optional<int64_t>& value) {
  if (value) {
    args.push_back(flag(name, std::to_string(*value)));
  }
}

void add_switch(Args& args, const char* name, bool set) {
  if (set) {
    args.emplace_back(name);
  }
}

// podman names its runtime, and that runtime's flags, before the subcommand.
void add_global(Args& args, const CreateSpec& spec, bool podman) {
  if (podman && !spec.runtime.empty()) {
    args.push_back(flag("runtime", spec.runtime));
    for (const auto& runtime_flag : spec.runtime_flags) {
      args.push_back(flag("runtime-flag", runtime_flag));
    }
  }
  args.emplace_back("run");
}

// Identity, lifecycle and the container's isolation from the host.
void add_isolation(Args& args, const CreateSpec& spec, bool podman) {
  add_if(args, "name", spec.name);
  add_if(args, "hostname", spec.hostname);
  for (const auto& [label, value] : spec.labels) {
    args.push_back(label_flag(label, value));
  }
  add_switch(args, "--rm", spec.auto_remove);
  add_switch(args, "--init", spec.init);
  add_if(args, "init-path", spec.init_path);
  add_if(args, "pull", spec.pull);
  add_if(args, "log-driver", spec.log_driver);
  add_if(args, "network", spec.network);
  add_if(args, "runtime", podman ? "" : spec.runtime);
  for (const auto& cap : spec.cap_drop) {
    args.push_back(flag("cap-drop", cap));
  }
  add_switch(args, "--security-opt=no-new-privileges:true", spec.no_new_privileges);
  if (!spec.seccomp_profile.empty()) {
    args.push_back(flag("security-opt", "seccomp=" + spec.seccomp_profile.string()));
  }
  add_if(args, "user", spec.user);
  for (const auto& group : spec.group_add) {
    args.push_back(flag("group-add", group));
  }
}

// A bind's fields are CSV (bind_mount_spec quotes them and refuses unsafe paths).
std::string mount_flag(const Mount& mount) {
  if (mount.kind == Mount::Kind::tmpfs) {
    std::string options = create_body::joined(mount.options);
    return flag("tmpfs", mount.target.string() + (options.empty() ? "" : ":" + options));
  }
  std::string value = bind_mount_spec(mount.source, mount.target, mount.read_only);
  return flag("mount",
              mount.options.empty() ? value : value + "," + create_body::joined(mount.options));
}

void add_filesystem(Args& args, const CreateSpec& spec) {
  add_switch(args, "--read-only", spec.read_only_rootfs);
  if (spec.read_only_tmpfs) {
    args.push_back(flag("read-only-tmpfs", *spec.read_only_tmpfs ? "true" : "false"));
  }
  for (const Mount& mount : spec.mounts) {
    args.push_back(mount_flag(mount));
  }
  add_if(args, "shm-size", spec.shm_bytes);
  add_if(args, "workdir", spec.workdir);
}

void add_limits(Args& args, const CreateSpec& spec) {
  add_if(args, "cgroups", spec.cgroups);
  add_if(args, "memory", spec.memory_bytes);
  add_if(args, "memory-swap", spec.memory_swap_bytes);
  if (spec.cpus) {
    args.push_back(flag("cpus", cpus_text(*spec.cpus)));
  }
  add_if(args, "cpuset-cpus", spec.cpuset);
  add_if(args, "pids-limit", spec.pids_limit);
  for (const Ulimit& limit : spec.ulimits) {
    args.push_back(flag("ulimit", limit.name + "=" + std::to_string(limit.soft) + ":" +
                                      std::to_string(limit.hard)));
  }
}

}  // namespace

std::string cpus_text(double cpus) {
  std::ostringstream out;
  out << cpus;
  return out.str();
}

std::vector<std::string> cli_environment(const CreateSpec& spec) {
  Args args;
  for (const EnvVar& var : spec.env) {
    args.push_back(flag("env", var.value ? var.name + "=" + *var.value : var.name));
  }
  for (const auto& name : spec.unset_env) {
    args.push_back(flag("unsetenv", name));
  }
  return args;
}

std::vector<std::string> cli_arguments(const CreateSpec& spec, bool podman,
                                       const std::vector<std::string>& extra) {
  Args args;
  add_global(args, spec, podman);
  add_isolation(args, spec, podman);
  add_filesystem(args, spec);
  add_limits(args, spec);
  Args env = cli_environment(spec);
  args.insert(args.end(), env.begin(), env.end());
  add_switch(args, "--interactive", spec.interactive);
  add_switch(args, "--tty", spec.tty);
  add_switch(args, "--detach", spec.detach);
  args.insert(args.end(), extra.begin(), extra.end());
  add_if(args, "entrypoint", spec.entrypoint);
  args.push_back(spec.image);
  args.insert(args.end(), spec.command.begin(), spec.command.end());
  return args;
}

}  // namespace sandshim::shim
