#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/run_record.hpp"
#include "common/changed_files.hpp"
#include "engine/create_spec.hpp"
#include "engine/engine.hpp"
#include "policy/limit_hints.hpp"
#include "policy/policy.hpp"
#include "policy/reach.hpp"
#include "run/engine_errors.hpp"
#include "run/outcome.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// How a container run ended, as the audit and the caller need it.
struct ContainerResult {
  audit::RunStatus status = audit::RunStatus::ok;
  int exit_code = 0;
  std::optional<int> signal;
  std::string message;  // one line for the user when sandshim ended or refused the run
  int64_t stdout_bytes = 0;
  int64_t stderr_bytes = 0;
  std::string stdout_tail;
  std::string stderr_tail;
  std::string image_id;    // the image's content digest, asked for while the container runs
  LimitFacts limit_facts;  // what the run showed of the limits it met
  std::string limit_hit;   // the keys of the limits it hit, comma-separated, for the audit
  std::string transfer;    // a remote engine: what travelled, for the audit row's message only
  std::string set_aside;   // sandbox.workspace = rw: protected names the run created, moved aside
  std::string git_carry;   // sandbox.workspace = rw: git's state carried back, or left behind
  std::optional<ChangedEntries> changed;     // a run that could write the workspace: what changed
  std::string changed_note;                  // what that scan could not look at, for the row
  std::shared_ptr<HandedGit> handed_git;     // a broker's: for the caller's client to carry
  std::vector<std::string> created_names;    // a broker's: protected names for the client to move
  std::vector<ProtectedLink> restore_links;  // a broker's: protected links for the client to make
};

// One attempt as the engine gets it: the client's arguments (the audit's engine_args) and, for a
// cold run, the container as data (the spec those arguments serialize), which the API path
// creates without the client.
struct EngineCall {
  std::vector<std::string> args;
  std::optional<CreateSpec> create;
};

// Runs the engine client with `call` and stays in charge until the container is gone:
// relays stdio, kills the container at the deadline, forwards signals, tells an OOM kill from
// a deadline or a signal, and leaves a guardian behind in case the shim itself is killed.
ContainerResult run_container(const Engine& engine, const EngineCall& call, const RunSpec& spec,
                              const Policy& policy);

}  // namespace sandshim::shim
