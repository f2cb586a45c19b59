#include "install/doctor_help.hpp"

namespace sandshim::install {

const char* const k_doctor_usage = R"(sandshim doctor [--json]
sandshim doctor --containers [--json] [CONTAINER...]

Checks, one line each, that everything sandshim relies on is in place, and says how to fix
what is not:
  mode      direct or broker mode (broker.mode in /etc/sandshim/config, and whether a broker
            answers); in direct mode, whether this uid reaches a rootful engine socket
  broker    broker mode: who holds the socket (its uid by SO_PEERCRED: not yours), its version
  access    broker mode: whether this uid can still reach the engine around the broker (the
            docker group, a socket it may write): a warning, with the fix
  policy    the config files load
  engine    the engine answers; its version, cgroup version and driver, rootless or not; the
            path cold runs take (the API socket, podman's API service, or the client)
  engines   with engine.endpoints: how many of the engines answer, each one's runs in flight
            (a warning when some do not: placement skips them; a failure when none does)
  runtime   the engine's default OCI runtime
  seccomp   the engine applies its seccomp profile
  limits    the memory, swap, cpus and pids limits are really enforced (a rootless engine on
            cgroup v1 accepts and drops them); see limits.unenforced
  image     each image of images.COMMAND is present (runs never pull)
  version   python3 and node in their image against the next ones on PATH after shim.dir:
            a warning when major.minor differ (a suite sees other features), naming the fix
  shims     a link for each shimmed command is in shim.dir (`sandshim install`)
  path      shim.dir is first on PATH, and which commands it covers
  audit     the audit database is writable and its hash chain verifies
In broker mode the engine, image and audit lines are the broker's, asked through its read-only
`status` verb (its engine, its images, its pool, its audit verified for this caller); runtime,
seccomp, limits and version are not checked from a client.
  hooks     for each agent installed (project or user): that it will call the hooks — the
            hook binary exists; Claude Code: no disableAllHooks, no managed-only hooks; Codex:
            asked itself (`codex app-server`, hooks/list, the codex on PATH): each of sandshim's
            hooks listed as trusted (the project trusted, the hook reviewed and unchanged since);
            the lines for its config.toml when not, for CI; Gemini CLI: the folder is trusted
            and hooksConfig.enabled
  sandbox   with Claude Code's hooks installed: whether Claude Code's own sandbox is on, and
            if so whether its commands may reach the broker's socket (on Linux only
            sandbox.network.allowAllUnixSockets lets them, with every other unix socket)

Each line starts with ok, warn or fail; a failure ends with the command that fixes it. The
exit code is 1 when any check fails (warnings do not count), else 0.

With --containers, inspects running sandshim containers (label org.sandshim.run), or the
CONTAINERs named, against the container-runtime checks of the CIS Docker Benchmark (4.1 and
section 5): user, AppArmor, SELinux, capabilities, privileged, sensitive mounts, ports, host
network/PID/IPC/UTS/user namespaces, memory, CPU, pids, read-only root, restart policy,
devices, ulimits, mount propagation, seccomp, cgroup parent, no-new-privileges, default bridge,
engine socket. A check that does not apply on this host says n/a. Exit 1 when any fails.

Examples:
  sandshim doctor
  sandshim doctor --json | jq '.checks[] | select(.status != "ok")'
  sandshim doctor --containers
  sandshim doctor --containers sandshim-0123abcd --json)";

}  // namespace sandshim::install
