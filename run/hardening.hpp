#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/create_spec.hpp"
#include "policy/policy.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// The container of one run as data, built by an ordered list of small named steps, then the
// engine's own additions (EngineDialect::complete): the API path creates it, and
// build_run_arguments gives it to the client. Caller-supplied strings are only its command.
CreateSpec build_create_spec(const Policy& policy, const RunSpec& spec);

// The engine client's argument list for one run ("run", flags..., image, command...): the spec
// of build_create_spec, serialized (cli_arguments).
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

// Each step, exposed for unit tests: it fills its part of the container's spec.
void add_identity(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_lifecycle(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_network(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_runtime(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_privileges(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_filesystem(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_limits(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_environment(CreateSpec& create, const Policy& policy, const RunSpec& spec);
void add_stdio(CreateSpec& create, const Policy& policy, const RunSpec& spec);

}  // namespace sandshim::shim
