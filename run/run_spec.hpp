#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.hpp"
#include "engine/engine_names.hpp"
#include "policy/masks.hpp"
#include "policy/reach.hpp"
#include "run/git_stage.hpp"
#include "run/protected_copies.hpp"
#include "run/workspace_gate.hpp"

namespace sandshim::shim {

// The caller's stdio as the run relays it: the shim's own fds 0-2, or fds a broker received.
struct StdioFds {
  int in = 0;
  int out = 1;
  int err = 2;
};

// sandbox.network = allowlist: the host directory of the run's egress socket and the forwarder
// mounted into the container (run/egress_session.hpp).
struct EgressMount {
  std::filesystem::path host_dir;   // holds proxy.sock; bind-mounted at k_egress_inside_dir
  std::filesystem::path forwarder;  // sandshim-forward on the host, mounted read-only
};

// Everything about one sandboxed run that is not policy: what to run, where, as whom.
struct RunSpec {
  std::string run_id;
  std::string invoked_as;            // python, node, sh, run
  std::vector<std::string> command;  // the container's argv, exactly as the caller gave it
  std::filesystem::path cwd;         // the caller's cwd, the same path inside the container
  std::filesystem::path workspace;   // mounted at the same path
  std::string image;
  std::vector<std::pair<std::string, std::string>> env;  // what passes into the container
  std::string user;                                      // uid:gid inside the container
  std::vector<gid_t> supplementary_gids;                 // a broker's run: the caller's gid
  bool tty = false;                                      // both ends of the caller are a TTY
  StdioFds stdio;                                        // the caller's stdin, stdout, stderr
  bool one_stream = false;  // the caller's stdout and stderr are one file (not a TTY): one stream
  std::vector<int> cpu_choices;           // the CPUs a cpuset is chosen from; empty: no cpuset
  std::filesystem::path cpu_online_file;  // mounted over /sys/.../cpu/online with a cpuset
  int64_t deadline_epoch_s = 0;           // for `sandshim gc`
  EngineDialect dialect;                  // the engine's differences
  bool warm = false;     // runs in a container of the warm pool, started in advance
  std::string image_id;  // known before a warm run (the pool checks it); else probed
  // A warm run through the container's launcher: the pid whose /proc root reaches its socket,
  // and the token it must answer with. 0: through `docker exec`.
  int64_t launcher_pid = 0;
  std::string launcher_token;
  MaskPlan masks;                              // workspace paths sandbox.hide covers
  MaskSources mask_sources;                    // what covers them
  std::vector<BindPath> writable_mounts;       // sandbox.writable, with protected names read-only
  std::vector<std::string> absent_protected;   // rw workspace: protected names it lacks at first
  std::vector<ProtectedLink> protected_links;  // and those that are links
  std::shared_ptr<GitStage> git_stage;         // rw workspace: git's writes, carried back after
  std::shared_ptr<ProtectedCopies> protected_copies;  // a broker's rw: what stays read-only
  std::filesystem::path cache_dir;        // sandbox.cache = on: the host directory; else empty
  std::filesystem::path seccomp_profile;  // podman: the profile without user namespaces
  std::optional<WorkspaceGate> gate;      // a broker's run: the command waits on sandshim-gate
  std::optional<EgressMount> egress;      // sandbox.network = allowlist
  // images.NAME = host: the host paths mounted read-only at the same place, and PATH inside.
  std::vector<std::filesystem::path> host_mounts;
  std::string host_path;
  std::vector<std::pair<std::string, std::string>> host_environment;  // PYTHONUSERBASE of a script
  std::string container_name() const { return container_name_of(run_id); }
};

// A claimed warm container. Its name is sandshim-RUN_ID: the run takes its id.
struct PoolClaim {
  std::string run_id;
  std::string image_id;
  std::vector<std::string> create_args;  // how the container was started, for the audit
  int64_t launcher_pid = 0;              // its launcher's process (0: it has none)
  std::string launcher_token;
};

}  // namespace sandshim::shim
