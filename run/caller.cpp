#include "run/caller.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>

#include "common/env_list.hpp"
#include "common/hex.hpp"
#include "common/strings.hpp"
#include "policy/known_agents.hpp"

namespace sandshim::shim {

namespace {

std::string env_or_empty(const std::vector<std::string>& environment, const char* name) {
  return env_value(environment, name).value_or("");
}

// Each agent marks the processes it starts with a variable of its own (policy/known_agents.hpp).
std::string guess_agent(const std::vector<std::string>& environment) {
  for (const KnownAgent& agent : known_agents()) {
    for (const std::string& variable : agent.session_markers) {
      if (env_value(environment, variable)) {
        return agent.audit_name;
      }
    }
  }
  return "unknown";
}

std::optional<CallerIdentity>& caller_override() {
  static std::optional<CallerIdentity> identity;
  return identity;
}

// The parent of another process, from /proc (0 when it is gone).
pid_t parent_of(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("PPid:")) {
      return static_cast<pid_t>(std::atoi(line.c_str() + 5));
    }
  }
  return 0;
}

std::string process_name(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

}  // namespace

Caller identify_caller(const std::vector<std::string>& environment) {
  Caller caller;
  caller.uid = ::getuid();
  caller.gid = ::getgid();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  caller.host = host;
  caller.pid = ::getpid();
  caller.ppid = ::getppid();
  if (const auto& identity = caller_override()) {
    caller.uid = identity->uid;
    caller.gid = identity->gid;
    caller.pid = identity->pid;
    caller.ppid = parent_of(identity->pid);
  }
  caller.parent_name = process_name(caller.ppid);
  caller.agent = env_or_empty(environment, "SANDSHIM_AGENT");
  if (caller.agent.empty()) {
    caller.agent = guess_agent(environment);
  }
  caller.agent_session = env_or_empty(environment, "SANDSHIM_SESSION_ID");
  caller.tool_use_id = env_or_empty(environment, "SANDSHIM_TOOL_USE_ID");
  return caller;
}

void act_for_caller(const CallerIdentity& identity) {
  caller_override() = identity;
}

std::string new_run_id() {
  return random_hex(8);
}

}  // namespace sandshim::shim
