#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <iostream>
#include <map>
#include <string>

#include "hooks/agents/agent.hpp"
#include "skip.hpp"

namespace {

std::map<std::string, std::string> g_skipped;  // test case -> why
size_t g_cases = 0;

struct CaseCounter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    ++g_cases;
    TestEventListenerBase::testCaseStarting(info);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(CaseCounter)

namespace sandshim::test {

void skip_test(const std::string& why) {
  WARN("skipped: " << why);
  g_skipped.emplace(Catch::getResultCapture().getCurrentTestName(), why);
}

}  // namespace sandshim::test

// ctest's exit code for a skipped test (SKIP_RETURN_CODE in tests/CMakeLists.txt).
constexpr int k_skipped = 77;

int main(int argc, char* argv[]) {
  sandshim::hooks::publish_known_agents();  // as the program does at start-up
  int failed = Catch::Session().run(argc, argv);
  for (const auto& [name, why] : g_skipped) {
    std::cerr << "skipped: " << name << ": " << why << '\n';
  }
  if (!g_skipped.empty()) {
    std::cerr << g_skipped.size() << " of " << g_cases << " test case(s) skipped\n";
  }
  return failed == 0 && g_cases > 0 && g_skipped.size() == g_cases ? k_skipped : failed;
}
