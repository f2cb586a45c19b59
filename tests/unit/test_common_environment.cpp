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
    ScopedVariable dir("SANDSHIM_TEST_DIR", "/srv/dir");
    CHECK(environment::absolute("SANDSHIM_TEST_DIR") == std::filesystem::path("/srv/dir"));
  }
  ScopedVariable relative("SANDSHIM_TEST_DIR", "dir-here");
  CHECK_FALSE(environment::absolute("SANDSHIM_TEST_DIR"));
  ScopedVariable xdg("XDG_STATE_HOME", "/srv/state");
  CHECK(environment::xdg_home("state") == std::filesystem::path("/srv/state"));
}

TEST_CASE("environment: a flag is exactly true, text may be empty", "[common][environment]") {
  {
    ScopedVariable yes("SANDSHIM_TEST_FLAG", "true");
    CHECK(environment::flag("SANDSHIM_TEST_FLAG"));
  }
  ScopedVariable one("SANDSHIM_TEST_FLAG", "1");
  CHECK_FALSE(environment::flag("SANDSHIM_TEST_FLAG"));
  ScopedVariable empty("SANDSHIM_TEST_TEXT", "");
  CHECK(environment::text("SANDSHIM_TEST_TEXT") == std::string());
}
