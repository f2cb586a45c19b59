#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandshim::audit {

// What became of a run. Stored as the lowercase names below.
enum class RunStatus {
  running,       // inserted before the container starts
  ok,            // exit code 0
  error,         // non-zero exit of the command itself
  timeout,       // killed at the deadline
  oom,           // killed by the kernel at the memory limit
  killed,        // stopped by a signal (to the shim, or from outside)
  refused,       // the policy refused it; no container started
  engine_error,  // the engine or the image was not usable; no command ran
  abandoned,     // the shim died before completing the row
};

std::string to_string(RunStatus status);
std::optional<RunStatus> run_status_from_string(const std::string& text);
// Every status name, for messages that list the valid choices.
std::vector<std::string> run_status_names();

// A fresh random id (24 hex digits) for a run or a decision, unique across hosts.
std::string new_record_id();

// One row of the audit: everything a reviewer needs to know about one run.
struct RunRecord {
  std::string run_id;  // unique, also in the container's name and labels
  int64_t start_ms = 0;
  int64_t end_ms = 0;             // 0 while running
  std::string invoked_as;         // the name the shim was called by: python, node, sh, run
  std::vector<std::string> argv;  // the command as given, exact bytes
  std::string cwd;
  std::string workspace;
  std::string engine;  // docker | podman, and the endpoint when not local
  std::string via;     // broker (a broker ran it for its SO_PEERCRED caller) | direct
  std::string image;
  std::string image_digest;
  std::string container_name;
  std::vector<std::string> engine_args;  // the full argument list given to the engine
  std::string policy_digest;
  std::vector<std::string> policy_sources;
  std::string limits;  // the limits in force, "memory=512m cpus=1 pids=64 timeout=30s"
  RunStatus status = RunStatus::running;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string message;  // why it was refused or failed, one line
  std::string
      limit_hit;  // the policy keys of the limits the run hit: "sandbox.pids,sandbox.timeout"
  int64_t stdout_bytes = 0;
  int64_t stderr_bytes = 0;
  std::string stdout_tail;
  std::string stderr_tail;
  uid_t uid = 0;
  std::string host;
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string parent_name;
  std::string agent;  // its descriptor's audit_name (claude-code, codex…), or unknown
  std::string agent_session;
  std::string tool_use_id;
  std::vector<std::string> env_names;  // names only, never values
  bool warm = false;
  int64_t hidden_count = 0;               // workspace paths sandbox.hide masked
  std::vector<std::string> hidden_globs;  // the globs that matched them
  // A run that could write the workspace (sandbox.workspace = rw, sandbox.writable): how many
  // entries changed during it, and the first of them; unset when it could not write there.
  std::optional<int64_t> changed_count;
  std::vector<std::string> changed_paths;
  // Filled by the store from /proc for `pid`: with it they name the shim process for good.
  std::string boot_id;
  int64_t pid_start_ticks = 0;
};

}  // namespace sandshim::audit
