#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "run/launcher_client.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// Warm runs with the launcher through a broker. The broker's user cannot follow /proc/PID/root
// into a container that runs as the caller's uid (ptrace access), so a broker's warm container
// gets a directory of the broker's own, ROOT/RUN_ID on a tmpfs, mounted at /.sandshim/launch;
// its launcher listens there and admits the broker's uid only. ROOT is 0700: on the host only
// the broker reaches it; RUN_ID is 1733, so the container's uid can create its socket and list
// nothing. The claim connects, checks that the listener is the container's own process, and
// removes the directory before the command is sent: the command finds a dead directory.

// Set by `sandshim broker` (--launch-dir): serve launchers in ROOT. Returns "" or why not (ROOT
// is not a directory of this uid on a tmpfs); then a broker's warm runs go through exec. What a
// previous broker left in ROOT goes (its idle containers then go cold, their rows say why).
std::string serve_launchers_in(const std::filesystem::path& root);

// ROOT, when this process serves a broker's launchers.
std::optional<std::filesystem::path> broker_launch_root();

// Whether the warm container of `spec` (a broker's run: it has a workspace gate) gets a
// directory of ROOT for its launcher's socket.
bool uses_broker_launch(const RunSpec& spec);

// Makes ROOT/RUN_ID and returns the container's flags for it: the mount, the launcher's socket
// and the one uid it admits (this process's); none when the directory cannot be made.
std::vector<std::string> broker_launch_flags(const std::string& run_id);

// Removes ROOT/RUN_ID, whatever the caller's processes left in it; a no-op without ROOT.
void remove_broker_launch_dir(const std::string& run_id);

// The host path of the launcher's socket of the warm container of `spec` whose process is PID:
// in ROOT/RUN_ID for a broker's run, else through /proc/PID/root.
std::string launcher_socket_of(const RunSpec& spec, int64_t pid);

// Connects to the launcher of the claimed container of `spec`: through ROOT/RUN_ID, whose
// listener must be the container's own process, or else through /proc/PID/root.
LauncherLink connect_claimed_launcher(const RunSpec& spec);

}  // namespace sandshim::shim
