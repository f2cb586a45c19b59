#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "audit/run_record.hpp"
#include "engine/engine_fault.hpp"
#include "policy/policy.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// How long the client may outlive the removal of its container before the shim stops waiting
// for an engine that does not answer, and hands the container over to its guardian.
inline constexpr int64_t k_client_grace_ms = 5000;

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
  // The run went over the Engine API (engine.api = on): the engine's part of a failure is the
  // API client's typed report, and stderr is the program's alone. Else the engine client's
  // error lines on stderr say it.
  bool over_api = false;
  std::optional<ApiFault> api_fault;
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

// How the interpreters say a script given by path does not exist: held back with the engine's
// errors, so a host script the image lacks is reported in one line, not a stack trace.
bool starts_like_missing_script(const std::string& text);

}  // namespace sandshim::shim
