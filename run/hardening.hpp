#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "run/run_spec.hpp"

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

// A warm pool container whose command is sandshim's launcher (`launcher`, the host's file,
// mounted read-only): the same steps, the launcher's token by name in the environment, and the
// launcher waits for one run for up to `idle_seconds`.
std::vector<std::string> build_launcher_pool_arguments(const Policy& policy, const RunSpec& spec,
                                                       const std::vector<std::string>& extra,
                                                       const std::filesystem::path& launcher,
                                                       int64_t idle_seconds);

// The exec of one run in a claimed warm container: stdio, user, cwd and environment names.
std::vector<std::string> build_exec_arguments(const Policy& policy, const RunSpec& spec);

// What a run hands the launcher of its claimed warm container, in the form of an exec (`launch`,
// user, cwd, environment names, container, command): the row's record and the launch client's
// environment (launch_environment).
std::vector<std::string> build_launch_arguments(const Policy& policy, const RunSpec& spec);

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
