#pragma once

#include <string>
#include <vector>

#include "shim/policy.hpp"
#include "shim/run_spec.hpp"

namespace sandshim::shim {

// The engine's argument list for one run ("run", flags..., image, command...). Built by an
// ordered list of small named steps; caller-supplied strings only ever follow the image.
std::vector<std::string> build_run_arguments(const Policy& policy, const RunSpec& spec);

// Each step, exposed for unit tests: it appends its flags to `args`.
void add_identity_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_lifecycle_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_network_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_privilege_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_filesystem_flags(std::vector<std::string>& args, const Policy& policy,
                          const RunSpec& spec);
void add_limit_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);
void add_environment_flags(std::vector<std::string>& args, const Policy& policy,
                           const RunSpec& spec);
void add_stdio_flags(std::vector<std::string>& args, const Policy& policy, const RunSpec& spec);

}  // namespace sandshim::shim
