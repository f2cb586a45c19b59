#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/environment.hpp"

namespace environment = sandshim::environment;

namespace {

// Sets NAME for one test and puts back what was there.
struct ScopedVariable {
  const char* name;
  std::optional<std::string> before;
  ScopedVariable(const char* variable, const char* value)
      : name(variable), before(environment::text(variable)) {
    ::setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (before) {
      ::setenv(name, before->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
};

}  // namespace

TEST_CASE("environment: a path variable counts only when absolute", "[common][environment]") {
  {
    ScopedVariable codex("CODEX_HOME", "/srv/codex");
    CHECK(environment::codex_home() == std::filesystem::path("/srv/codex"));
  }
  ScopedVariable relative("CODEX_HOME", "codex-here");
  CHECK_FALSE(environment::codex_home());
  ScopedVariable xdg("XDG_STATE_HOME", "/srv/state");
  CHECK(environment::xdg_home("state") == std::filesystem::path("/srv/state"));
}

TEST_CASE("environment: a flag is exactly true, text may be empty", "[common][environment]") {
  {
    ScopedVariable yes("GEMINI_CLI_TRUST_WORKSPACE", "true");
    CHECK(environment::gemini_trust_workspace());
  }
  ScopedVariable one("GEMINI_CLI_TRUST_WORKSPACE", "1");
  CHECK_FALSE(environment::gemini_trust_workspace());
  ScopedVariable empty("CLAUDE_CODE_SHELL_PREFIX", "");
  CHECK(environment::text("CLAUDE_CODE_SHELL_PREFIX") == std::string());
}
