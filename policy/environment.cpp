#include "policy/environment.hpp"

#include <algorithm>

#include "common/glob.hpp"
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
      "*TOKEN*", "*SECRET*", "*KEY*",     "*PASSWORD*", "*PASSWD*",   "*CREDENTIAL*",
      "*AUTH*",  "*COOKIE*", "*SESSION*", "*PRIVATE*",  "*_PAT",      "*_PAT_*",
      "PATH",    "HOME",     "LD_*",      "DOCKER_*",   "SANDSHIM_*", "CONTAINER_*",
      "SSH_*",   "GPG_*",    "*_PROXY",   "TMPDIR",     "SHELL"};
  return deny;
}

bool holds_url_credentials(std::string_view value) {
  for (size_t scheme_end = value.find("://"); scheme_end != std::string_view::npos;
       scheme_end = value.find("://", scheme_end + 3)) {
    std::string_view rest = value.substr(scheme_end + 3);
    std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    size_t at = authority.rfind('@');
    if (at != std::string_view::npos &&
        authority.substr(0, at).find(':') != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

const std::vector<std::pair<std::string, std::string>>& sandbox_fixed_environment() {
  static const std::vector<std::pair<std::string, std::string>> fixed = {
      {"HOME", "/tmp"}, {"TMPDIR", "/tmp"}, {"SHELL", "/bin/sh"}};
  return fixed;
}

namespace {

// Deny patterns ignore case (`LC_AccessToken` is a token too) and win over every allow pattern.
bool matches_any(const std::string& name, const std::vector<std::string>& patterns,
                 GlobCase letter_case) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& pattern) {
    return glob_match(pattern, name, letter_case);
  });
}

// Under runsc a write(2) to stdout can be short (Debian's gVisor, 2022) and an unbuffered
// Python drops the rest with exit 0: without PYTHONUNBUFFERED its buffered stdio writes it all.
bool unsafe_on_runtime(const std::string& name, const Policy& policy) {
  return policy.runtime == Runtime::runsc && name == "PYTHONUNBUFFERED";
}

bool passes(const std::string& name, const Policy& policy) {
  if (unsafe_on_runtime(name, policy)) {
    return false;
  }
  // Allow first: most of a caller's variables are allowed by no pattern, and the deny list's
  // `*WORD*` patterns are the costly ones (every shim call filters the whole environment).
  bool allowed = matches_any(name, default_env_allow(), GlobCase::sensitive) ||
                 matches_any(name, policy.env_allow, GlobCase::sensitive);
  return allowed && !matches_any(name, default_env_deny(), GlobCase::ignored) &&
         !matches_any(name, policy.env_deny, GlobCase::ignored);
}

}  // namespace

std::vector<std::string> allowed_entries(const std::vector<std::string>& host_env,
                                         const Policy& policy) {
  std::vector<std::string> allowed;
  for (const auto& entry : host_env) {
    size_t equals = entry.find('=');
    if (equals != std::string::npos && equals != 0 && passes(entry.substr(0, equals), policy)) {
      allowed.push_back(entry);
    }
  }
  return allowed;
}

FilteredEnvironment filter_environment(const std::vector<std::string>& host_env,
                                       const Policy& policy) {
  FilteredEnvironment result;
  for (const auto& entry : allowed_entries(host_env, policy)) {
    size_t equals = entry.find('=');
    std::string name = entry.substr(0, equals);
    if (holds_url_credentials(std::string_view(entry).substr(equals + 1))) {
      result.refused_credentials.push_back(name);
      continue;
    }
    result.entries.emplace_back(name, entry.substr(equals + 1));
  }
  return result;
}

std::vector<std::pair<std::string, std::string>> sandbox_environment(
    const std::vector<std::string>& host_env, const Policy& policy) {
  return filter_environment(host_env, policy).entries;
}

}  // namespace sandshim::shim
