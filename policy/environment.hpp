#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/policy.hpp"

namespace sandshim::shim {

// The built-in allowlist: terminal and locale settings and the interpreters' own, non-secret
// variables, so `PYTHONPATH=src python -m unittest` behaves as on the host.
const std::vector<std::string>& default_env_allow();
// Names that look like secrets never pass, whatever allows them: deny wins.
const std::vector<std::string>& default_env_deny();

// Variables every run gets with a value that holds inside the sandbox, whatever the caller's:
// HOME and TMPDIR point at the writable /tmp, SHELL at the shell every image has.
const std::vector<std::pair<std::string, std::string>>& sandbox_fixed_environment();

// Whether a value carries a password in a URL (`scheme://user:password@host`).
bool holds_url_credentials(std::string_view value);

// What passes into the sandbox, and the allowed names refused for the credentials in their value
// (the run names them in one line, never their values).
struct FilteredEnvironment {
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<std::string> refused_credentials;
};
FilteredEnvironment filter_environment(const std::vector<std::string>& host_env,
                                       const Policy& policy);

// The NAME=VALUE entries whose name the policy lets into the sandbox (values not judged yet: the
// run names those refused for their credentials): what a broker's client sends of its environment.
std::vector<std::string> allowed_entries(const std::vector<std::string>& host_env,
                                         const Policy& policy);

// Filters the caller's environment (NAME=VALUE strings) down to what may enter the sandbox.
std::vector<std::pair<std::string, std::string>> sandbox_environment(
    const std::vector<std::string>& host_env, const Policy& policy);

}  // namespace sandshim::shim
