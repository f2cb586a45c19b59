#include "run/run_request.hpp"

#include <unistd.h>

#include "common/env_list.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

extern char** environ;

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    env.emplace_back(*entry);
  }
  return env;
}

void read_process_cwd(RunRequest& request) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (ec) {
    request.cwd_error = ec.message();
    return;
  }
  request.cwd = fs::weakly_canonical(cwd, ec);
}

}  // namespace

std::optional<std::string> RunRequest::env_value(const std::string& name) const {
  return sandshim::env_value(environment, name);
}

bool dry_run_requested(const RunRequest& request) {
  auto value = request.env_value("SANDSHIM_DRY_RUN");
  return value && !value->empty() && *value != "0";
}

RunRequest request_from_process(std::string invoked_as, std::vector<std::string> command,
                                std::vector<Setting> overrides, bool dry_run) {
  RunRequest request;
  request.invoked_as = std::move(invoked_as);
  request.command = std::move(command);
  request.overrides = std::move(overrides);
  request.dry_run = dry_run;
  request.environment = process_environment();
  request.caller = identify_caller(request.environment);
  read_process_cwd(request);
  request.home = home_directory();
  request.tty = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
  request.broker = broker_policy_source();
  return request;
}

}  // namespace sandshim::shim
