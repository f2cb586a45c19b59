#include "run/hardening.hpp"

#include <algorithm>

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

template <typename T>
void append(std::vector<T>& list, const std::vector<T>& more) {
  list.insert(list.end(), more.begin(), more.end());
}

// The caller's command, behind the workspace gate's arguments in a broker's run and behind the
// egress forwarder under sandbox.network = allowlist; stderr onto stdout when the caller's two
// are one file (a launcher is handed one descriptor for both instead).
std::vector<std::string> container_command(const RunSpec& spec) {
  std::vector<std::string> argv;
  if (spec.gate) {
    argv = gate_prefix(*spec.gate, spec.workspace);
  }
  bool merge = spec.one_stream && spec.launcher_pid == 0;
  const std::vector<std::string> command = merge ? one_stream_command(spec.command) : spec.command;
  append(argv, spec.egress ? egress_command(command) : command);
  return argv;
}

Mount bind_of(const BindPath& bind) {
  return bind_mount(bind.source, bind.target, bind.read_only);
}

Mount tmpfs_mount(const std::string& target, std::vector<std::string> options) {
  return Mount{Mount::Kind::tmpfs, "", target, false, std::move(options)};
}

}  // namespace

void add_identity(CreateSpec& create, const Policy& policy, const RunSpec& spec) {
  create.name = spec.container_name();
  create.hostname = policy.hostname;
  create.labels.emplace_back(k_label_run, spec.run_id);
  create.labels.emplace_back(k_label_deadline, std::to_string(spec.deadline_epoch_s));
  create.labels.emplace_back(k_label_policy, policy.digest().substr(0, 16));
}

// Single use, and nothing left behind: removed on exit, an init to reap zombies and forward
// signals, never a surprise pull, no log files a flood could fill.
void add_lifecycle(CreateSpec& create, const Policy& /*policy*/, const RunSpec& /*spec*/) {
  create.auto_remove = true;
  create.init = true;
  create.pull = "never";
  create.log_driver = "none";
}

void add_network(CreateSpec& create, const Policy& policy, const RunSpec& /*spec*/) {
  // allowlist: loopback only; the egress proxy is reached through a mounted unix socket.
  Network network = policy.network == Network::allowlist ? Network::none : policy.network;
  create.network = to_string(network);
}

// gVisor: docker names a registered runtime on `run`; podman takes it before the subcommand.
// Without a network docker gets runsc-nonet (runsc --network=none, registered by deps.sh):
// runsc's own network stack refuses docker's empty network namespace on some hosts; podman's
// runsc gets the flag itself (podman's empty network namespace is not enough for it), and
// applies the container's seccomp profile only when asked (oci-seccomp).
void add_runtime(CreateSpec& create, const Policy& policy, const RunSpec& spec) {
  if (policy.runtime == Runtime::runc) {
    return;
  }
  bool no_network = policy.network != Network::bridge;  // allowlist runs keep loopback only too
  create.runtime = to_string(policy.runtime);
  if (!spec.dialect.is_podman()) {
    create.runtime += no_network ? "-nonet" : "";
    return;
  }
  create.runtime_flags = {"oci-seccomp"};
  if (no_network) {
    create.runtime_flags.emplace_back("network=none");
  }
}

// No capabilities, no way to gain privileges, never root. A broker's git stage is its group's:
// the run's processes have that group, the caller's processes on the host do not.
void add_privileges(CreateSpec& create, const Policy& /*policy*/, const RunSpec& spec) {
  create.cap_drop = {"ALL"};
  create.no_new_privileges = true;
  create.seccomp_profile = spec.seccomp_profile;
  create.user = spec.user;
  for (gid_t gid : spec.supplementary_gids) {
    create.group_add.push_back(std::to_string(gid));
  }
  if (spec.git_stage && spec.git_stage->group()) {
    create.group_add.push_back(std::to_string(*spec.git_stage->group()));
  }
}

namespace {

// What the run may write that outlives it (sandbox.writable, sandbox.cache), what it may not
// see (sandbox.hide) and, in a broker's run, the gate.
void add_workspace_mounts(CreateSpec& create, const RunSpec& spec) {
  for (const BindPath& bind : spec.writable_mounts) {
    create.mounts.push_back(bind_of(bind));
  }
  if (!spec.cache_dir.empty()) {
    Mount cache = bind_mount(spec.cache_dir, k_cache_mount, false);
    if (spec.dialect.is_podman()) {  // docker's binds take no noexec (nor do its volumes)
      cache.options = {"noexec", "nosuid", "nodev"};
    }
    create.mounts.push_back(cache);
  }
  for (const BindPath& bind : mask_binds(spec.masks, spec.mask_sources)) {
    create.mounts.push_back(bind_of(bind));
  }
  if (spec.gate) {
    create.mounts.push_back(bind_mount(spec.gate->binary, k_gate_target, true));
  }
}

}  // namespace

// A read-only root, a small noexec /tmp (exec only with sandbox.tmp_exec) as the only writable
// place, the workspace at its host path so every path the agent uses means the same thing inside,
// its secrets masked.
void add_filesystem(CreateSpec& create, const Policy& policy, const RunSpec& spec) {
  create.read_only_rootfs = true;
  for (const auto& path : spec.host_mounts) {  // images.NAME = host
    create.mounts.push_back(bind_mount(path, path, true));
  }
  create.mounts.push_back(
      tmpfs_mount("/tmp", {"rw", policy.tmp_exec ? "exec" : "noexec", "nosuid", "nodev",
                           "size=" + std::to_string(policy.tmp_bytes)}));
  create.shm_bytes = static_cast<int64_t>(policy.shm_bytes);
  create.mounts.push_back(
      bind_mount(spec.workspace, spec.workspace, policy.workspace_mode != WorkspaceMode::rw));
  add_workspace_mounts(create, spec);
  create.workdir = spec.cwd.string();
  if (spec.egress) {
    append(create.mounts, egress_mounts(*spec.egress));
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
void add_limits(CreateSpec& create, const Policy& policy, const RunSpec& spec) {
  create.memory_bytes = create.memory_swap_bytes = static_cast<int64_t>(policy.memory_bytes);
  create.cpus = quota_within(policy.cpus, spec.cpu_choices.size());
  create.cpuset = cpuset_for(policy.cpus, spec.cpu_choices, spec.run_id);
  if (!create.cpuset.empty() && !spec.cpu_online_file.empty()) {  // nproc and friends count it
    create.mounts.push_back(bind_mount(spec.cpu_online_file, k_online_cpus_target, true));
  }
  create.pids_limit = host_pids_limit(policy);
  create.ulimits = {{"nofile", policy.nofile, policy.nofile},
                    {"nproc", nproc_limit(policy), nproc_limit(policy)},
                    {"core", 0, 0}};
}

namespace {

EnvVar setting_of(const std::string& setting) {
  size_t eq = setting.find('=');
  return {setting.substr(0, eq), setting.substr(eq + 1)};
}

}  // namespace

// The caller's variables by name only: the engine client takes each value from its own
// environment, so values never show in the process list.
void add_environment(CreateSpec& create, const Policy& policy, const RunSpec& spec) {
  for (const auto& [name, value] : sandbox_fixed_environment()) {
    create.env.push_back({name, value});
  }
  if (policy.network == Network::none) {
    // npm and npx would retry the registry until the deadline; offline they fail at once
    // (ENOTCACHED), and the run names the network line.
    create.env.push_back({"npm_config_offline", "true"});
  }
  if (!spec.host_path.empty()) {  // the host interpreter's bin directory first
    create.env.push_back({"PATH", spec.host_path});
  }
  for (const auto& [name, value] : spec.host_environment) {
    create.env.push_back({name, value});
  }
  if (!spec.cache_dir.empty()) {
    for (const auto& setting : cache_environment()) {
      create.env.push_back(setting_of(setting));
    }
  }
  for (const auto& entry : spec.env) {
    if (spec.egress && is_egress_variable(entry.first)) {
      continue;  // the caller's proxy never reaches an allowlist run: the egress proxy does
    }
    create.env.push_back({entry.first, std::nullopt});
  }
  if (spec.egress) {
    append(create.env, egress_environment());
  }
}

void add_stdio(CreateSpec& create, const Policy& /*policy*/, const RunSpec& spec) {
  create.interactive = true;
  create.tty = spec.tty;
}

namespace {

using Step = void (*)(CreateSpec&, const Policy&, const RunSpec&);
// The container's confinement: shared by a cold run and a warm pool container, so the two can
// never drift apart.
constexpr Step k_container_steps[] = {add_identity,   add_lifecycle,  add_network, add_runtime,
                                      add_privileges, add_filesystem, add_limits,  add_environment};

CreateSpec confined_container(const Policy& policy, const RunSpec& spec) {
  CreateSpec create;
  for (Step step : k_container_steps) {
    step(create, policy, spec);
  }
  return create;
}

}  // namespace

CreateSpec build_create_spec(const Policy& policy, const RunSpec& spec) {
  CreateSpec create = confined_container(policy, spec);
  add_stdio(create, policy, spec);
  if (spec.gate) {
    create.entrypoint = k_gate_target;
  }
  create.image = spec.image;
  create.command = container_command(spec);
  spec.dialect.complete(create);
  return create;
}

std::vector<std::string> build_run_arguments(const Policy& policy, const RunSpec& spec) {
  return cli_arguments(build_create_spec(policy, spec), spec.dialect.is_podman());
}

namespace {

// A pool container: the run's confinement, detached, its command `command`.
std::vector<std::string> detached_container(CreateSpec create, const RunSpec& spec,
                                            const std::vector<std::string>& extra,
                                            std::vector<std::string> command) {
  create.detach = true;
  create.image = spec.image;
  create.command = std::move(command);
  spec.dialect.complete(create);
  return cli_arguments(create, spec.dialect.is_podman(), extra);
}

// The user, cwd and environment of a command started in a running container, then the
// container and the command. An exec'd command names the gate itself: the container's
// entrypoint does not apply to it.
void add_exec_command(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec) {
  args.push_back("--user=" + spec.user);
  args.push_back("--workdir=" + spec.cwd.string());
  CreateSpec exec_env;
  exec_env.tty = spec.tty;
  add_environment(exec_env, policy, spec);
  spec.dialect.complete(exec_env);
  append(args, cli_environment(exec_env));
  args.push_back(spec.container_name());
  if (spec.gate) {
    args.push_back(k_gate_target);
  }
  append(args, container_command(spec));
}

}  // namespace

std::vector<std::string> build_pool_arguments(const Policy& policy, const RunSpec& spec,
                                              const std::vector<std::string>& extra,
                                              int64_t idle_seconds) {
  // The idle init's child ignores the signals `docker kill` forwards, and ends by itself, so an
  // orphaned pool container removes itself (--rm) even if nothing else does.
  return detached_container(
      confined_container(policy, spec), spec, extra,
      {"sh", "-c", "trap '' HUP INT QUIT TERM; exec sleep " + std::to_string(idle_seconds)});
}

std::vector<std::string> build_launcher_pool_arguments(const Policy& policy, const RunSpec& spec,
                                                       const std::vector<std::string>& extra,
                                                       const std::filesystem::path& launcher,
                                                       int64_t idle_seconds) {
  CreateSpec create = confined_container(policy, spec);
  create.mounts.push_back(bind_mount(launcher, launch::k_binary_in_container, true));
  create.env.push_back({launch::k_token_variable, std::nullopt});
  return detached_container(std::move(create), spec, extra,
                            {launch::k_binary_in_container, std::to_string(idle_seconds)});
}

std::vector<std::string> build_exec_arguments(const Policy& policy, const RunSpec& spec) {
  std::vector<std::string> args = {"exec", "--interactive"};
  if (spec.tty) {
    args.push_back("--tty");
  }
  add_exec_command(args, policy, spec);
  return args;
}

std::vector<std::string> build_launch_arguments(const Policy& policy, const RunSpec& spec) {
  std::vector<std::string> args = {"launch"};
  add_exec_command(args, policy, spec);
  return args;
}

}  // namespace sandshim::shim
