#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace sandshim::shim {

// What a finished run tells about the limits it met: read by the run loop, judged by limit_hints.
struct LimitFacts {
  int exit_code = 0;
  bool timed_out = false;               // our deadline removed the container
  bool oom_killed = false;              // the kernel killed it at the memory cap
  std::optional<int64_t> pids_refused;  // forks refused at the pids cap; nullopt: not readable
  std::string stderr_last;              // the last lines of the program's stderr
  std::string workspace;                // the workspace path, as the program sees it
};

// A limit the run hit, and how to lift it: the key, its value now, and the line to add.
struct LimitHint {
  std::string key;          // "sandbox.pids"
  std::string value;        // "64", as in force
  std::string suggested;    // "256", what the line sets; empty when no line lifts it
  std::string config_file;  // where the line goes (a fully trusted layer)
  std::string reason;       // what showed it: "12 forks refused at the cap"
  std::string narrower;     // a narrower line that also lifts it, or empty
};

// The limits a run hit, from its facts alone (pure, so each rule is unit-tested): at most one
// hint per key, in the order the user should look at them.
std::vector<LimitHint> limit_hints(const LimitFacts& facts, const Policy& policy,
                                   const std::string& config_file);

// The one line printed after the program's output (without the "sandshim: " prefix).
std::string describe_hint(const LimitHint& hint);

// The keys, comma-separated, for the audit row's limit_hit field ("" when none).
std::string limit_keys(const std::vector<LimitHint>& hints);

// How many forks the pids controller refused, from a pids.events text ("max 3"); nullopt when
// the text has no max line.
std::optional<int64_t> parse_pids_events(const std::string& text);

// The pids.events file of a container's cgroup on this host, when one of the engines' layouts
// (docker and podman, cgroupfs or systemd drivers, cgroup v1 and v2) has it; empty otherwise.
std::string pids_events_path(const std::string& container_id);

}  // namespace sandshim::shim
