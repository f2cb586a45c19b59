#pragma once

#include <cstdint>
#include <string>

namespace sandshim::audit {

// One connection a run's egress proxy saw (sandbox.network = allowlist), linked to the run.
struct ConnectionRecord {
  std::string run_id;
  int64_t start_ms = 0;
  std::string method;  // CONNECT, GET, ...; empty when the request was unreadable
  std::string name;    // the host the sandbox asked for
  int64_t port = 0;
  std::string address;  // the address connected to, or the one refused; empty: none
  bool allowed = false;
  std::string reason;  // why it was refused, or what allowed it
  int64_t bytes_up = 0;
  int64_t bytes_down = 0;
  int64_t duration_ms = 0;
};

}  // namespace sandshim::audit
