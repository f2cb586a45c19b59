#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandshim::shim {

// One mount of a container: a host path bound in, or a tmpfs.
struct Mount {
  enum class Kind { bind, tmpfs };
  Kind kind = Kind::bind;
  std::filesystem::path source;  // bind: the host path
  std::filesystem::path target;
  bool read_only = false;  // bind
  // bind: noexec, nosuid, nodev (podman's binds take them; docker's API binds do not);
  // tmpfs: its options in order as the engine takes them (rw, noexec, size=…).
  std::vector<std::string> options;
};

// A bind mount of `source` at `target`.
inline Mount bind_mount(std::filesystem::path source, std::filesystem::path target,
                        bool read_only) {
  return Mount{Mount::Kind::bind, std::move(source), std::move(target), read_only, {}};
}

struct Ulimit {
  std::string name;
  int64_t soft = 0;
  int64_t hard = 0;
};

// One variable of the container. Without a value it passes by name: the engine's client takes
// the value from its own environment (so it never shows in the process list), and the API body
// takes it from the same environment, the first entry of that name, as the client does.
struct EnvVar {
  std::string name;
  std::optional<std::string> value;
};

// One container as data: what the hardening steps decide, built once per attempt. The CLI
// serializer (cli_arguments) and the Engine API serializers (engine_create.hpp) both read it,
// so the client's path and the API's create the same container; nothing parses either form back.
struct CreateSpec {
  std::string name;
  std::string hostname;
  std::vector<std::pair<std::string, std::string>> labels;  // in order
  // Lifecycle: single use, an init as PID 1 (podman: at init_path), never a pull, no logs.
  bool auto_remove = false;
  bool init = false;
  std::string init_path;
  std::string pull;        // empty: the engine's default
  std::string log_driver;  // empty: the engine's default
  bool detach = false;     // the client returns once it started (a warm pool container)
  // Isolation.
  std::string network;  // none | bridge; empty: the engine's default
  std::string runtime;  // the OCI runtime; empty: the engine's default
  // podman: the runtime and these flags of it are named before `run`; docker takes none.
  std::vector<std::string> runtime_flags;
  std::vector<std::string> cap_drop;
  bool no_new_privileges = false;
  std::filesystem::path seccomp_profile;  // a file; empty: the engine's default
  std::string user;                       // uid:gid
  std::vector<std::string> group_add;     // supplementary gids of the container's processes
  bool read_only_rootfs = false;
  // podman: false keeps its writable tmpfs off /run and /var/tmp; nullopt: not said.
  std::optional<bool> read_only_tmpfs;
  std::vector<Mount> mounts;  // in order
  std::optional<int64_t> shm_bytes;
  std::string workdir;
  // Limits. cgroups: podman's mode, "enabled" so a containers.conf cannot drop every limit.
  std::string cgroups;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> memory_swap_bytes;  // memory plus swap
  std::optional<double> cpus;
  std::string cpuset;  // empty: every CPU
  std::optional<int64_t> pids_limit;
  std::vector<Ulimit> ulimits;
  // Environment: set in order, then the names to unset (podman's TERM without a terminal).
  std::vector<EnvVar> env;
  std::vector<std::string> unset_env;
  // Stdio.
  bool interactive = false;
  bool tty = false;
  // What runs.
  std::string entrypoint;  // empty: the image's
  std::string image;
  std::vector<std::string> command;
};

// `--cpus` as the client is given it (and as the API serializers read it back as a number, so
// both paths round a quota alike).
std::string cpus_text(double cpus);

// The engine client's `run` arguments for `spec` (podman: its runtime's global flags first),
// as the run hands them to the client and the audit records them; `extra` (raw flags a pool
// adds: its labels, a broker's launcher) go after the spec's own flags, before the image.
std::vector<std::string> cli_arguments(const CreateSpec& spec, bool podman,
                                       const std::vector<std::string>& extra = {});

// The `--env` and `--unsetenv` flags of `spec`, as an exec in a running container takes them.
std::vector<std::string> cli_environment(const CreateSpec& spec);

}  // namespace sandshim::shim
