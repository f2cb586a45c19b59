#include "shim/environment.hpp"

#include <algorithm>

#include "common/strings.hpp"

namespace sandshim::shim {

const std::vector<std::string>& default_env_allow() {
  static const std::vector<std::string> allow = {"TERM",
                                                 "COLORTERM",
                                                 "NO_COLOR",
                                                 "FORCE_COLOR",
                                                 "LANG",
                                                 "LANGUAGE",
                                                 "LC_*",
                                                 "TZ",
                                                 "COLUMNS",
                                                 "LINES",
                                                 "PYTHONPATH",
                                                 "PYTHONUNBUFFERED",
                                                 "PYTHONDONTWRITEBYTECODE",
                                                 "PYTHONHASHSEED",
                                                 "PYTHONWARNINGS",
                                                 "PYTHONIOENCODING",
                                                 "PYTHONUTF8",
                                                 "PYTHONSAFEPATH",
                                                 "PYTHONOPTIMIZE",
                                                 "PYTHONDEVMODE",
                                                 "PYTHONFAULTHANDLER",
                                                 "NODE_PATH",
                                                 "NODE_ENV",
                                                 "NODE_OPTIONS",
                                                 "NODE_NO_WARNINGS"};
  return allow;
}

const std::vector<std::string>& default_env_deny() {
  static const std::vector<std::string> deny = {
      "*TOKEN*",    "*token*",    "*SECRET*",  "*secret*",     "*KEY*",        "*key*",
      "*PASSWORD*", "*password*", "*PASSWD*",  "*CREDENTIAL*", "*credential*", "*AUTH*",
      "*COOKIE*",   "*SESSION*",  "*PRIVATE*", "PATH",         "HOME",         "TMPDIR",
      "SHELL",      "LD_*",       "DOCKER_*",  "SANDSHIM_*",   "CONTAINER_*",  "SSH_*",
      "GPG_*",      "*_PROXY",    "*_proxy"};
  return deny;
}

const std::vector<std::pair<std::string, std::string>>& sandbox_fixed_environment() {
  static const std::vector<std::pair<std::string, std::string>> fixed = {
      {"HOME", "/tmp"}, {"TMPDIR", "/tmp"}, {"SHELL", "/bin/sh"}};
  return fixed;
}

namespace {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return glob_match(pattern, name); });
}

bool passes(const std::string& name, const Policy& policy) {
  if (matches_any(name, default_env_deny()) || matches_any(name, policy.env_deny)) {
    return false;
  }
  return matches_any(name, default_env_allow()) || matches_any(name, policy.env_allow);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> sandbox_environment(
    const std::vector<std::string>& host_env, const Policy& policy) {
  std::vector<std::pair<std::string, std::string>> result;
  for (const auto& entry : host_env) {
    size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) {
      continue;
    }
    std::string name = entry.substr(0, equals);
    if (passes(name, policy)) {
      result.emplace_back(name, entry.substr(equals + 1));
    }
  }
  return result;
}

}  // namespace sandshim::shim
