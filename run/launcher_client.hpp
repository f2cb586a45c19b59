#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// A connection to the launcher of a claimed warm container (inside/launch.cpp), or why there is
// none: its socket is missing, it answered with the wrong token, or too late.
struct LauncherLink {
  UniqueFd socket;
  std::string failure;
};

// How long the launcher may take to say hello before the run goes cold instead.
inline constexpr std::chrono::milliseconds k_launcher_hello_timeout{2000};

// The host path of the launcher's socket in the container whose process `pid` is.
std::string launcher_socket_path(int64_t pid);

// Connects to the launcher of the container whose process `pid` is, through /proc/PID/root (only
// its user and root may), and checks its hello; nothing of the run is sent before that.
LauncherLink connect_launcher(int64_t pid, const std::string& token,
                              std::chrono::milliseconds timeout = k_launcher_hello_timeout);
// The same at a socket's host path (a broker's directory for the launcher, run/broker_launch.hpp).
LauncherLink connect_launcher_at(const std::string& path, const std::string& token,
                                 std::chrono::milliseconds timeout = k_launcher_hello_timeout);

// The command's environment from the `--env=` flags of its launch arguments: a value of its own,
// or the spec's value of that name (as `docker exec` takes it from the client's environment).
std::vector<std::string> launch_environment(const std::vector<std::string>& launch_args,
                                            const RunSpec& spec);

// Starts the run loop's client: a child process that hands the command (argv, environment, cwd,
// and in/out/err over SCM_RIGHTS) to the launcher once, and exits as the command did, 128+N for
// signal N, as `docker exec` does; 137 when the container ended before the launcher answered
// (removed at the deadline, say); 125 when the launcher did not take the command.
pid_t start_launch_client(UniqueFd socket, const RunSpec& spec, const std::vector<std::string>& env,
                          int in, int out, int err);

// Whether the caller's stdin may be handed to the container as it is: an anonymous pipe or
// /dev/null (a file or a socket could be reopened for writing through /proc/self/fd).
bool stdin_may_pass(int fd);

}  // namespace sandshim::shim
