#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sandshim::shim {

// Who asked for the run: recorded in the audit, and used to pick the container user.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string host;
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string parent_name;
  std::string agent;  // from the hook's SANDSHIM_AGENT, else guessed from the agent's variables
  std::string agent_session;
  std::string tool_use_id;
};

// This process's identity; the agent and session ids come from `environment` (NAME=VALUE).
Caller identify_caller(const std::vector<std::string>& environment);

// The identity a broker child runs for: the peer of its socket (SO_PEERCRED), not this
// process. identify_caller() reports it instead of getuid()/getpid() once set.
struct CallerIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
};
void act_for_caller(const CallerIdentity& identity);

// A fresh random run id (16 hex digits), also the container's name suffix.
std::string new_run_id();

}  // namespace sandshim::shim
