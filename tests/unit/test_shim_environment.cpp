#include <catch2/catch.hpp>

#include "policy/environment.hpp"

using namespace sandshim::shim;

namespace {

std::vector<std::string> names_passed(const std::vector<std::string>& host, const Policy& policy) {
  std::vector<std::string> names;
  for (const auto& [name, value] : sandbox_environment(host, policy)) {
    names.push_back(name);
  }
  return names;
}

}  // namespace

TEST_CASE("only allowlisted, non-secret names pass", "[environment]") {
  std::vector<std::string> host = {"AWS_SECRET_ACCESS_KEY=x",
                                   "GITHUB_TOKEN=x",
                                   "ANTHROPIC_API_KEY=x",
                                   "PATH=/usr/bin",
                                   "HOME=/root",
                                   "LD_PRELOAD=/evil.so",
                                   "DOCKER_HOST=tcp://x",
                                   "LANG=C.UTF-8",
                                   "LC_ALL=C",
                                   "TZ=UTC",
                                   "PYTHONPATH=src",
                                   "NODE_ENV=test",
                                   "RANDOM_THING=1",
                                   "SANDSHIM_CONFIG=/x"};
  CHECK(names_passed(host, Policy{}) ==
        std::vector<std::string>{"LANG", "LC_ALL", "TZ", "PYTHONPATH", "NODE_ENV"});
}

TEST_CASE("policy allow adds names, deny wins over every allow", "[environment]") {
  Policy policy;
  policy.env_allow = {"MY_*"};
  policy.env_deny = {"MY_PRIVATE_*", "TZ"};
  std::vector<std::string> host = {"MY_SETTING=1", "MY_PRIVATE_X=2", "MY_API_TOKEN=3", "TZ=UTC"};
  CHECK(names_passed(host, policy) == std::vector<std::string>{"MY_SETTING"});
}

TEST_CASE("values are kept exactly", "[environment]") {
  auto passed = sandbox_environment({"LANG=a=b=c", "TERM="}, Policy{});
  REQUIRE(passed.size() == 2);
  CHECK(passed[0].second == "a=b=c");
  CHECK(passed[1].second.empty());
}

TEST_CASE("deny patterns ignore case and cover every allowed pattern", "[environment]") {
  std::vector<std::string> host = {"LC_GITHUB_PAT=ghp", "LC_AccessToken=t", "LC_api_key=k",
                                   "LC_ALL=C", "lc_secret=s"};
  Policy policy;
  policy.env_allow = {"lc_*"};
  policy.env_deny = {"lc_all"};
  CHECK(names_passed(host, policy).empty());
  CHECK(names_passed({"LC_ALL=C"}, Policy{}) == std::vector<std::string>{"LC_ALL"});
}

TEST_CASE("values with URL credentials are refused by name", "[environment]") {
  auto filtered = filter_environment(
      {"LC_DATABASE_URL=postgres://u:pw@db/x", "LC_MIRROR=https://example.org/a:b@c", "LANG=C"},
      Policy{});
  CHECK(filtered.refused_credentials == std::vector<std::string>{"LC_DATABASE_URL"});
  REQUIRE(filtered.entries.size() == 2);
  CHECK(filtered.entries[0].first == "LC_MIRROR");
}

TEST_CASE("URL credentials need a password before the @", "[environment]") {
  CHECK(holds_url_credentials("https://user:secret@host/path"));
  CHECK(holds_url_credentials("x redis://:pw@h and more"));
  CHECK_FALSE(holds_url_credentials("ssh://git@host/repo"));
  CHECK_FALSE(holds_url_credentials("https://host:8443/a@b"));
  CHECK_FALSE(holds_url_credentials("user:pw@host"));
}

TEST_CASE("runsc keeps PYTHONUNBUFFERED out: its short writes would drop output", "[environment]") {
  std::vector<std::string> host = {"PYTHONUNBUFFERED=1", "PYTHONPATH=src"};
  Policy gvisor;
  gvisor.runtime = Runtime::runsc;
  gvisor.env_allow = {"PYTHONUNBUFFERED"};
  CHECK(names_passed(host, gvisor) == std::vector<std::string>{"PYTHONPATH"});
  CHECK(names_passed(host, Policy{}) == std::vector<std::string>{"PYTHONUNBUFFERED", "PYTHONPATH"});
}
