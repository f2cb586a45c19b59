#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/store.hpp"
#include "policy/broker_policy.hpp"
#include "policy/policy.hpp"
#include "policy/reach.hpp"
#include "run/caller.hpp"
#include "run/git_stage.hpp"
#include "run/interpreter_fit.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// Everything a run reads from its caller, as one value: the shim and `sandshim run` build it from
// their own process (request_from_process), a broker from a socket request. The run path reads
// nothing from process globals except through this.
// A broker's audit store, opened by its worker before the request came: a run takes it (once)
// when its own options name the same database, anchor and key.
struct PreopenedStore {
  std::unique_ptr<audit::Store> store;
};

// What a broker's run hands its client to carry out as the caller: git's state (git_stage.hpp)
// and the protected names the run created at the workspace root, to move to NAME.sandshim-RUN_ID,
// and the protected links it removed or replaced, to make again.
struct RunHandback {
  HandedGit git;
  std::filesystem::path workspace;
  std::string run_id;
  std::vector<std::string> created_names;
  std::vector<ProtectedLink> restore_links;  // protected links the run removed: made again
};

struct RunRequest {
  std::string invoked_as;            // the shim name (python, node, sh), "run" or "pool"
  std::vector<std::string> command;  // the container's argv; command[0] picks the image
  std::vector<Setting> overrides;    // `sandshim run` flags, applied over every config layer
  bool dry_run = false;              // print the engine command line, run nothing
  bool wrap_shell =
      false;      // an agent's whole shell command (`sandshim -c`): sandbox.workspace = wrap
  Caller caller;  // who asked: identity, parent, agent and session ids
  std::vector<std::string> environment;  // the caller's NAME=VALUE list
  std::filesystem::path cwd;             // empty when the caller's cwd could not be read
  std::string cwd_error;                 // why, when empty
  std::filesystem::path home;            // the caller's home (never a workspace)
  StdioFds stdio;
  bool tty = false;  // both stdin and stdout of the caller are a terminal
  // Set: a broker's caller, whose policy is the broker's (flags and user texts only tighten).
  std::optional<BrokerPolicySource> broker;
  // Through a broker: what the project asks of the interpreter, as the caller's client read it
  // (sandbox.version_fit); data, never a file the broker opens.
  std::optional<VersionAsk> version_ask;
  // Through a broker: the caller's user.name and user.email as its client read them (git inside
  // a run under rw commits as the caller); direct mode reads them itself.
  std::vector<std::pair<std::string, std::string>> git_identity;
  // When set, called with the exit code as soon as the run's row is complete: a broker's worker
  // answers its client then and lets the caller's descriptors go, before the pool's refill and
  // the worker's teardown.
  // A run under rw through a broker hands over what it changed of git's state with it, and the
  // protected names it created, which the client moves aside as the caller.
  std::function<void(int exit_code, RunHandback handback)> tell_outcome;
  // A broker's worker: the store it opened while the client built this request (taken once).
  std::shared_ptr<PreopenedStore> preopened_store;

  // The caller's value of `name`, nullopt when unset.
  std::optional<std::string> env_value(const std::string& name) const;
};

// SANDSHIM_DRY_RUN=1 in the caller's environment: print the engine command line, run nothing.
bool dry_run_requested(const RunRequest& request);

// A request from this process: its environ, cwd, identity and fds 0-2.
RunRequest request_from_process(std::string invoked_as, std::vector<std::string> command,
                                std::vector<Setting> overrides = {}, bool dry_run = false);

}  // namespace sandshim::shim
