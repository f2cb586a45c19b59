#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/run_record.hpp"
#include "shim/engine.hpp"
#include "shim/engine_errors.hpp"
#include "shim/limit_hints.hpp"
#include "shim/policy.hpp"
#include "shim/run_spec.hpp"

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
};

// What the run loop observed by the time the engine client ended: the outcome is decided from
// these facts alone (classify_outcome), and its effects are applied after.
struct RunFacts {
  std::optional<int> client_code;      // the client's exit code; nullopt: it never reported
  bool timed_out = false;              // our deadline removed the container
  std::optional<int> received_signal;  // the last signal the shim received and forwarded
  bool client_abandoned = false;       // the engine did not confirm the removal in time
  bool oom_event = false;              // the engine reported an OOM kill of this container
  std::string stdout_head;             // the first bytes of each stream
  int64_t stdout_bytes = 0;
  std::string stderr_head;
  std::string stderr_last;  // the last lines of stderr
};

// The decision: the row's outcome, the caller's exit code, and what to do with held output.
struct Outcome {
  audit::RunStatus status = audit::RunStatus::ok;
  int exit_code = 0;
  std::optional<int> signal;
  std::string message;
  bool replaces_engine_output = false;  // the held engine lines are dropped: `message` says it
  bool engine_lost = false;             // the container may outlive the client
};

// Decides how a run ended from its facts, the spec and the policy; pure, so tests can drive
// every branch: deadline -> 124/timeout, signal -> 128+N/killed, engine errors -> 125, ...
Outcome classify_outcome(const RunFacts& facts, const RunSpec& spec, const Policy& policy);

// One stream (RunSpec::one_stream): the program's stderr came on stdout, so when that is all the
// program wrote, the rules that read its stderr (a script the image lacks) read it there.
void read_program_stderr_from_stdout(RunFacts& facts);

// Runs the engine client with `engine_args` and stays in charge until the container is gone:
// relays stdio, kills the container at the deadline, forwards signals, tells an OOM kill from
// a deadline or a signal, and leaves a guardian behind in case the shim itself is killed.
ContainerResult run_container(const Engine& engine, const std::vector<std::string>& engine_args,
                              const RunSpec& spec, const Policy& policy);

// Whether the engine client's last output says it lost the engine after the container started
// (the daemon died or restarted mid-run): the container may outlive the client.
bool reports_engine_lost(const std::string& engine_output);
// The one line for that case, from the client's own error.
std::string describe_lost_engine(const std::string& engine_output);

}  // namespace sandshim::shim
