#include "run/hardening.hpp"

#include <algorithm>
#include <sstream>

#include "common/strings.hpp"
#include "inside/launch_protocol.hpp"
#include "policy/environment.hpp"
#include "policy/reach.hpp"
#include "policy/workspace.hpp"
#include "run/cpu_share.hpp"
#include "run/egress_session.hpp"
#include "run/one_stream.hpp"

namespace sandshim::shim {

namespace {

std::string flag(const std::string& name, const std::string& value) {
  return "--" + name + "=" + value;
}

void append(std::vector<std::string>& args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
}

std::string cpus_value(double cpus) {
  std::ostringstream out;
  out << cpus;
  return out.str();
}

// The caller's command, behind the workspace gate's arguments in a broker's run and behind the
// egress forwarder under sandbox.network = allowlist; stderr onto stdout when the caller's two
// are one file (a launcher is handed one descriptor for both instead).
void append_command(std::vector<std::string>& args, const RunSpec& spec) {
  if (spec.gate) {
    append(args, gate_prefix(*spec.gate, spec.workspace));
  }
  bool merge = spec.one_stream && spec.launcher_pid == 0;
  const std::vector<std::string> command = merge ? one_stream_command(spec.command) : spec.command;
  append(args, spec.egress ? egress_command(command) : command);
}

}  // namespace

void add_identity_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec) {
  args.push_back(flag("name", spec.container_name()));
  args.push_back(flag("hostname", policy.hostname));
  args.push_back(label_flag(k_label_run, spec.run_id));
  args.push_back(label_flag(k_label_deadline, std::to_string(spec.deadline_epoch_s)));
  args.push_back(label_flag(k_label_policy, policy.digest().substr(0, 16)));
}

// Single use, and nothing left behind: removed on exit, an init to reap zombies and forward
// signals, never a surprise pull, no log files a flood could fill.
void add_lifecycle_flags(std::vector<std::string>& args, const Policy& /*policy*/,
                         const RunSpec& spec) {
  args.push_back("--rm");
  append(args, spec.dialect.init_flags());
  args.insert(args.end(), {"--pull=never", "--log-driver=none"});
}

void add_network_flags(std::vector<std::string>& args, const Policy& policy,
                       const RunSpec& /*spec*/) {
  // allowlist: loopback only; the egress proxy is reached through a mounted unix socket.
  Network network = policy.network == Network::allowlist ? Network::none : policy.network;
  args.push_back(flag("network", to_string(network)));
}

// gVisor: docker names a registered runtime on `run`; podman takes it before the subcommand.
// Without a network docker gets runsc-nonet (runsc --network=none, registered by deps.sh):
// runsc's own network stack refuses docker's empty network namespace on some hosts.
void add_runtime_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec) {
  if (policy.runtime != Runtime::runc && !spec.dialect.is_podman()) {
    std::string suffix = policy.network != Network::bridge ? "-nonet" : "";  // allowlist too
    args.push_back(flag("runtime", to_string(policy.runtime) + suffix));
  }
}

// No capabilities, no way to gain privileges, never root.
void add_privilege_flags(std::vector<std::string>& args, const Policy& /*policy*/,
                         const RunSpec& spec) {
  args.insert(args.end(), {"--cap-drop=ALL", "--security-opt=no-new-privileges:true"});
  if (!spec.seccomp_profile.empty()) {
    args.push_back(flag("security-opt", "seccomp=" + spec.seccomp_profile.string()));
  }
  args.push_back(flag("user", spec.user));
}

// A read-only root, a small noexec /tmp (exec only with sandbox.tmp_exec) as the only writable
// place, the workspace at its host path so every path the agent uses means the same thing inside,
// its secrets masked.
void add_filesystem_flags(std::vector<std::string>& args, const Policy& policy,
                          const RunSpec& spec) {
  args.push_back("--read-only");
  append(args, spec.dialect.filesystem_flags());
  for (const auto& path : spec.host_mounts) {  // images.NAME = host
    args.push_back(flag("mount", bind_mount_spec(path, true)));
  }
  args.push_back(flag("tmpfs", std::string("/tmp:rw,") + (policy.tmp_exec ? "exec" : "noexec") +
                                   ",nosuid,nodev,size=" + std::to_string(policy.tmp_bytes)));
  args.push_back(flag("shm-size", std::to_string(policy.shm_bytes)));
  args.push_back(
      flag("mount", bind_mount_spec(spec.workspace, policy.workspace_mode != WorkspaceMode::rw)));
  append(args, spec.writable_mounts);
  if (!spec.cache_dir.empty()) {
    args.push_back(cache_mount_flag(spec.cache_dir, spec.dialect.is_podman()));
  }
  append(args, mask_mount_flags(spec.masks, spec.mask_sources));
  if (spec.gate) {
    args.push_back(flag("mount", bind_mount_spec(spec.gate->binary, k_gate_target, true)));
  }
  args.push_back(flag("workdir", spec.cwd.string()));
  if (spec.egress) {
    append(args, egress_mount_flags(*spec.egress));
  }
}

namespace {

// Under gVisor the host cgroup's pids count is not the sandbox's: it holds the sentry's and the
// gofer's threads (~35 idle) and a ptrace stub process per sandboxed process (~6 host tasks
// each, measured), and the sentry dies (the engine exits 2) when it cannot start a thread. So
// there sandbox.pids is RLIMIT_NPROC, which gVisor's kernel counts for this sandbox alone
// (processes and threads), and the cgroup keeps a backstop well above what gVisor needs.
constexpr int64_t k_gvisor_host_tasks_per_task = 16;
constexpr int64_t k_gvisor_host_tasks_base = 256;

int64_t host_pids_limit(const Policy& policy) {
  if (policy.runtime != Runtime::runsc) {
    return policy.pids;
  }
  return policy.pids * k_gvisor_host_tasks_per_task + k_gvisor_host_tasks_base;
}

int64_t nproc_limit(const Policy& policy) {
  return policy.runtime == Runtime::runsc ? std::min(policy.pids, policy.nproc) : policy.nproc;
}

}  // namespace

// Memory without swap on top, CPU (as many CPUs seen as the quota covers), processes, open files;
// no core dumps.
void add_limit_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec) {
  append(args, spec.dialect.limit_flags());
  std::string memory = std::to_string(policy.memory_bytes);
  args.push_back(flag("memory", memory));
  args.push_back(flag("memory-swap", memory));
  args.push_back(flag("cpus", cpus_value(quota_within(policy.cpus, spec.cpu_choices.size()))));
  std::string cpuset = cpuset_for(policy.cpus, spec.cpu_choices, spec.run_id);
  if (!cpuset.empty()) {
    args.push_back(flag("cpuset-cpus", cpuset));  // nproc and friends count the quota
    if (!spec.cpu_online_file.empty()) {
      args.push_back(
          flag("mount", bind_mount_spec(spec.cpu_online_file, k_online_cpus_target, true)));
    }
  }
  args.push_back(flag("pids-limit", std::to_string(host_pids_limit(policy))));
  auto ulimit = [&](const std::string& name, int64_t value) {
    args.push_back(
        flag("ulimit", name + "=" + std::to_string(value) + ":" + std::to_string(value)));
  };
  ulimit("nofile", policy.nofile);
  ulimit("nproc", nproc_limit(policy));
  ulimit("core", 0);
}

// Only names: the engine client takes each value from its own environment, so values never
// show in the process list.
void add_environment_flags(std::vector<std::string>& args, const Policy& /*policy*/,
                           const RunSpec& spec) {
  for (const auto& [name, value] : sandbox_fixed_environment()) {
    args.push_back(flag("env", name + "=" + value));
  }
  if (!spec.host_path.empty()) {  // the host interpreter's bin directory first
    args.push_back(flag("env", "PATH=" + spec.host_path));
  }
  if (!spec.cache_dir.empty()) {
    for (const auto& setting : cache_environment()) {
      args.push_back(flag("env", setting));
    }
  }
  bool term_passed = spec.tty;
  for (const auto& entry : spec.env) {
    if (spec.egress && is_egress_variable(entry.first)) {
      continue;  // the caller's proxy never reaches an allowlist run: the egress proxy does
    }
    args.push_back(flag("env", entry.first));
    term_passed = term_passed || entry.first == "TERM";
  }
  append(args, spec.dialect.environment_flags(term_passed));
  if (spec.egress) {
    append(args, egress_environment_flags());
  }
}

void add_stdio_flags(std::vector<std::string>& args, const Policy& /*policy*/,
                     const RunSpec& spec) {
  args.push_back("--interactive");
  if (spec.tty) {
    args.push_back("--tty");
  }
}

namespace {

// podman's global flags for the runtime; runsc's own network is off when the sandbox has none
// (podman's empty network namespace is not enough for it).
std::vector<std::string> podman_runtime_flags(const Policy& policy, const RunSpec& spec) {
  if (policy.runtime == Runtime::runc || !spec.dialect.is_podman()) {
    return {};
  }
  // runsc applies the container's seccomp profile only when asked (--oci-seccomp).
  std::vector<std::string> flags = {flag("runtime", to_string(policy.runtime)),
                                    "--runtime-flag=oci-seccomp"};
  if (policy.network != Network::bridge) {  // allowlist runs keep loopback only too
    flags.push_back("--runtime-flag=network=none");
  }
  return flags;
}

// The subcommand `run`, after any global flags the engine needs.
std::vector<std::string> run_subcommand(const Policy& policy, const RunSpec& spec) {
  std::vector<std::string> args = podman_runtime_flags(policy, spec);
  args.push_back("run");
  return args;
}

using Step = void (*)(std::vector<std::string>&, const Policy&, const RunSpec&);
// The container's confinement: shared by a cold run and a warm pool container, so the two can
// never drift apart.
constexpr Step k_container_steps[] = {
    add_identity_flags,  add_lifecycle_flags,  add_network_flags, add_runtime_flags,
    add_privilege_flags, add_filesystem_flags, add_limit_flags,   add_environment_flags};

}  // namespace

std::vector<std::string> build_run_arguments(const Policy& policy, const RunSpec& spec) {
  std::vector<std::string> args = run_subcommand(policy, spec);
  for (Step step : k_container_steps) {
    step(args, policy, spec);
  }
  add_stdio_flags(args, policy, spec);
  if (spec.gate) {
    args.push_back(flag("entrypoint", k_gate_target));
  }
  args.push_back(spec.image);
  append_command(args, spec);
  return args;
}

namespace {

std::vector<std::string> detached_container(const Policy& policy, const RunSpec& spec,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> args = run_subcommand(policy, spec);
  for (Step step : k_container_steps) {
    step(args, policy, spec);
  }
  args.push_back("--detach");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The user, cwd and environment of a command started in a running container.
// An exec'd command names the gate itself: the container's entrypoint does not apply to it.
void append_exec_command(std::vector<std::string>& args, const RunSpec& spec) {
  if (spec.gate) {
    args.push_back(k_gate_target);
  }
  append_command(args, spec);
}

void add_exec_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec) {
  args.push_back(flag("user", spec.user));
  args.push_back(flag("workdir", spec.cwd.string()));
  add_environment_flags(args, policy, spec);
}

}  // namespace

std::vector<std::string> build_pool_arguments(const Policy& policy, const RunSpec& spec,
                                              const std::vector<std::string>& extra,
                                              int64_t idle_seconds) {
  std::vector<std::string> args = detached_container(policy, spec, extra);
  args.push_back(spec.image);
  // The idle init's child ignores the signals `docker kill` forwards, and ends by itself, so an
  // orphaned pool container removes itself (--rm) even if nothing else does.
  args.insert(
      args.end(),
      {"sh", "-c", "trap '' HUP INT QUIT TERM; exec sleep " + std::to_string(idle_seconds)});
  return args;
}

std::vector<std::string> build_launcher_pool_arguments(const Policy& policy, const RunSpec& spec,
                                                       const std::vector<std::string>& extra,
                                                       const std::filesystem::path& launcher,
                                                       int64_t idle_seconds) {
  std::vector<std::string> args = detached_container(policy, spec, extra);
  args.push_back(flag("mount", bind_mount_spec(launcher, launch::k_binary_in_container, true)));
  args.push_back(flag("env", launch::k_token_variable));
  args.push_back(spec.image);
  args.insert(args.end(), {launch::k_binary_in_container, std::to_string(idle_seconds)});
  return args;
}

std::vector<std::string> build_exec_arguments(const Policy& policy, const RunSpec& spec) {
  std::vector<std::string> args = {"exec"};
  add_stdio_flags(args, policy, spec);
  add_exec_flags(args, policy, spec);
  args.push_back(spec.container_name());
  append_exec_command(args, spec);
  return args;
}

std::vector<std::string> build_launch_arguments(const Policy& policy, const RunSpec& spec) {
  std::vector<std::string> args = {"launch"};
  add_exec_flags(args, policy, spec);
  args.push_back(spec.container_name());
  append_exec_command(args, spec);
  return args;
}

}  // namespace sandshim::shim
