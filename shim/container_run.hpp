#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/run_record.hpp"
#include "shim/engine.hpp"
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
  std::string image_id;  // the image's content digest, asked for while the container runs
};

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

// Names the engine failure in one line with its fix, from what the engine client printed.
std::string describe_engine_error(const std::string& engine_output, const RunSpec& spec);

}  // namespace sandshim::shim
