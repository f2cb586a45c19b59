#include "run/outcome.hpp"

#include <signal.h>

#include <algorithm>
#include <iterator>
#include <string_view>

#include "common/process.hpp"
#include "common/strings.hpp"
#include "engine/client_output.hpp"
#include "run/engine_errors.hpp"

namespace sandshim::shim {

using audit::RunStatus;

bool starts_like_missing_script(const std::string& text) {
  static const char* const k_prefixes[] = {"node:internal/modules/cjs/loader",
                                           "python3: can't open", "python: can't open",
                                           "sh: 0: cannot open", "bash: /"};
  if (text.empty()) {
    return false;
  }
  return std::any_of(std::begin(k_prefixes), std::end(k_prefixes), [&](const char* prefix) {
    return text.starts_with(prefix) || std::string_view(prefix).starts_with(text);
  });
}

namespace {

std::string program_name(const RunSpec& spec) {
  return std::filesystem::path(spec.command.front()).filename().string();
}

// The client failed before any container ran: 125, or 126 when the socket refused us.
bool engine_failed(const RunFacts& facts, int code) {
  return starts_like_engine_error(facts.stderr_head) &&
         (code == exit_code::k_sandbox_error ||
          (code == exit_code::k_cannot_execute && reports_socket_refused(facts.stderr_head)));
}

// The claimed warm container was removed outside sandshim before the exec: nothing ran. The
// engine names it, and the run id in its name is never visible inside, so a program cannot
// fake this line.
bool warm_container_gone(const RunFacts& facts, const RunSpec& spec, int code) {
  return spec.warm && code == 1 && facts.stdout_bytes == 0 &&
         reports_no_such_container(facts.stderr_head, spec.container_name());
}

// `docker exec` says 126 for a program missing from the image, where `docker run` says 127;
// its client prints the runtime's error on stdout.
bool exec_not_found(const RunFacts& facts, const RunSpec& spec, int code) {
  if (!spec.warm || code != exit_code::k_cannot_execute) {
    return false;
  }
  return reports_exec_not_found(facts.stdout_head) || reports_exec_not_found(facts.stderr_head);
}

// The first argument after the interpreter's options, when it is an absolute path: the script.
std::string script_argument(const RunSpec& spec) {
  for (size_t i = 1; i < spec.command.size(); ++i) {
    const std::string& arg = spec.command[i];
    if (!arg.starts_with("-")) {
      return arg.starts_with("/") ? arg : "";
    }
    if (arg == "-c" || arg == "-e" || arg == "-m" || arg == "--eval" || arg == "-p") {
      return "";  // code or a module, not a script path
    }
  }
  return "";
}

// The interpreter could not open the script the command names by a host path (a
// `#!/usr/bin/env node` script such as /usr/bin/npm): the image lacks that file.
bool script_missing_in_image(const RunFacts& facts, const RunSpec& spec, int code) {
  std::string script = script_argument(spec);
  if (script.empty() || code == 0 || facts.stdout_bytes != 0) {
    return false;
  }
  const std::string& err = facts.stderr_head;
  return err.find("Cannot find module '" + script + "'") != std::string::npos ||
         err.find("can't open file '" + script + "'") != std::string::npos ||
         err.starts_with("sh: 0: cannot open " + script + ":") ||
         err.starts_with("bash: " + script + ": No such file or directory");
}

Outcome missing_script(const RunSpec& spec) {
  Outcome outcome;
  outcome.status = RunStatus::error;
  outcome.exit_code = exit_code::k_not_found;
  outcome.message = quoted(script_argument(spec)) + " is a file on the host but not in the image " +
                    spec.image + ", so " + program_name(spec) +
                    " cannot run it there; add its package to the image, or set `images." +
                    program_name(spec) + " = IMAGE` to one that has it (see `sandshim images`)";
  outcome.replaces_engine_output = true;
  return outcome;
}

std::string removal_note(const RunFacts& facts, const std::string& otherwise) {
  if (!facts.client_abandoned) {
    return otherwise;
  }
  return "the engine did not confirm the container's removal within " +
         format_duration_ms(k_client_grace_ms) +
         ": its guardian keeps removing it until the engine answers";
}

Outcome engine_error(std::string message) {
  Outcome outcome;
  outcome.status = RunStatus::engine_error;
  outcome.exit_code = exit_code::k_sandbox_error;
  outcome.message = std::move(message);
  outcome.replaces_engine_output = true;
  return outcome;
}

Outcome engine_lost(std::string message) {
  Outcome outcome = engine_error(std::move(message));
  outcome.engine_lost = true;
  return outcome;
}

// What the engine client's error lines say: it lost the engine, or failed before anything ran.
std::optional<Outcome> client_error_outcome(const RunFacts& facts, const RunSpec& spec, int code) {
  if (code == exit_code::k_sandbox_error && reports_engine_lost(facts.stderr_last)) {
    return engine_lost(describe_lost_engine(facts.stderr_last));
  }
  if (engine_failed(facts, code)) {
    return engine_error(describe_engine_error(facts.stderr_head, spec));
  }
  return std::nullopt;
}

// The API client's typed fault: the engine lost mid-run, a program the engine could not start
// (126/127, as `docker run` exits), or an engine that refused the run before anything ran.
Outcome api_fault_outcome(const ApiFault& fault, const RunSpec& spec, int code) {
  if (fault.lost) {
    return engine_lost(describe_engine_lost(fault.reason, spec.dialect.info_command()));
  }
  bool socket_refused = fault.kind == EngineErrorKind::permission;
  if (!socket_refused && (code == exit_code::k_not_found || code == exit_code::k_cannot_execute)) {
    Outcome outcome;
    outcome.status = RunStatus::error;
    outcome.exit_code = code;
    outcome.message = "the engine could not start " + program_name(spec) + " in " + spec.image +
                      " (" + fault.reason + ")";
    return outcome;
  }
  return engine_error(describe_engine_failure(fault.kind, fault.reason, spec));
}

// The command's own exit: ok, error, or killed by a signal from outside sandshim.
Outcome command_exit(const RunFacts& facts, const RunSpec& spec, int code) {
  Outcome outcome;
  code = exec_not_found(facts, spec, code) ? exit_code::k_not_found : code;
  outcome.exit_code = code;
  outcome.status = code == 0 ? RunStatus::ok : RunStatus::error;
  if (code == 128 + SIGKILL) {
    outcome.status = RunStatus::killed;
    outcome.signal = SIGKILL;
  } else if (code > 128 && code < 128 + 32) {
    outcome.signal = code - 128;
  }
  return outcome;
}

// The run was stopped from outside: its deadline passed, or sandshim received a signal.
std::optional<Outcome> stopped_outcome(const RunFacts& facts, const RunSpec& spec,
                                       const Policy& policy) {
  if (facts.timed_out) {
    return Outcome{RunStatus::timeout,
                   exit_code::k_timeout,
                   SIGKILL,
                   program_name(spec) + " ran past its deadline of " +
                       format_duration_ms(policy.timeout_ms) + " (sandbox.timeout); " +
                       removal_note(facts, "the container was killed"),
                   false,
                   false};
  }
  if (facts.received_signal) {
    int sig = *facts.received_signal;
    return Outcome{
        RunStatus::killed,
        128 + sig,
        sig,
        "stopped by " + signal_name(sig) + "; " + removal_note(facts, "the container was stopped"),
        false,
        false};
  }
  return std::nullopt;
}

}  // namespace

void read_program_stderr_from_stdout(RunFacts& facts) {
  bool whole = facts.stdout_bytes == static_cast<int64_t>(facts.stdout_head.size());
  if (facts.stderr_head.empty() && whole) {
    facts.stderr_head = facts.stdout_head;
    facts.stdout_bytes = 0;
  }
}

Outcome classify_outcome(const RunFacts& facts, const RunSpec& spec, const Policy& policy) {
  int code = facts.client_code.value_or(exit_code::k_sandbox_error);
  if (std::optional<Outcome> stopped = stopped_outcome(facts, spec, policy)) {
    return *stopped;
  }
  if (warm_container_gone(facts, spec, code)) {
    return engine_error("the warm container " + spec.container_name() +
                        " was removed outside sandshim before the run; nothing ran in it");
  }
  if (facts.over_api) {
    if (facts.api_fault) {
      return api_fault_outcome(*facts.api_fault, spec, code);
    }
  } else if (auto outcome = client_error_outcome(facts, spec, code)) {
    return *outcome;
  }
  if (script_missing_in_image(facts, spec, code)) {
    return missing_script(spec);
  }
  if (code == 128 + SIGKILL && facts.oom_event) {
    return {RunStatus::oom,
            code,
            SIGKILL,
            program_name(spec) + " was killed at the memory limit of " +
                format_byte_size(policy.memory_bytes) + " (sandbox.memory)",
            false,
            false};
  }
  return command_exit(facts, spec, code);
}

}  // namespace sandshim::shim
