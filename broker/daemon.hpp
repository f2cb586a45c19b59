#pragma once

#include <sys/types.h>

#include <filesystem>

#include "broker/protocol.hpp"
#include "broker/settings.hpp"

namespace sandshim::broker {

struct DaemonOptions {
  std::filesystem::path socket = k_default_socket;
  mode_t socket_mode = 0666;        // who may connect; the caller's identity is SO_PEERCRED's
  int max_runs_per_user = 8;        // concurrent requests of one uid; more wait in its queue
  int max_queued_per_user = 256;    // beyond this a request is refused (125, one line)
  int request_timeout_ms = 10'000;  // a connection must send its request within this
};

// Accepts connections until SIGTERM or SIGINT, each request in a child of its own; returns
// the exit code of `sandshim broker`.
int serve(const DaemonOptions& options);

}  // namespace sandshim::broker
