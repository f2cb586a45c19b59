#pragma once

#include <string>
#include <vector>

#include "shim/policy.hpp"
#include "shim/run_spec.hpp"

namespace sandshim::shim {

// The engine's argument list for one run ("run", flags..., image, command...). Built by an
// ordered list of small named steps; caller-supplied strings only ever follow the image.
std::vector<std::string> build_run_arguments(const Policy& policy, const RunSpec& spec);

// A warm pool container: the same steps as a run (identity, lifecycle, network, privileges,
// file system, limits, HOME) started detached with `extra` flags (labels) and an idle command
// that outlives `idle_seconds`; the run's own environment, cwd and stdio come with its exec.
std::vector<std::string> build_pool_arguments(const Policy& policy, const RunSpec& spec,
                                              const std::vector<std::string>& extra,
                                              int64_t idle_seconds);

// The exec of one run in a claimed warm container: stdio, user, cwd and environment names.
std::vector<std::string> build_exec_arguments(const Policy& policy, const RunSpec& spec);

// Each step, exposed for unit tests: it appends its flags to `args`.
void add_identity_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_lifecycle_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_network_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_runtime_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_privilege_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_filesystem_flags(std::vector<std::string>& args, const Policy& policy,
                          const RunSpec& spec);
void add_limit_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_environment_flags(std::vector<std::string>& args, const Policy& policy,
                           const RunSpec& spec);
void add_stdio_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);

}  // namespace sandshim::shim
