#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/seccomp.hpp"

using nlohmann::json;
using sandshim::shim::seccomp_for_gvisor;
using sandshim::shim::seccomp_without_user_namespaces;

TEST_CASE("the podman profile allows clone and unshare only without CLONE_NEWUSER", "[seccomp]") {
  json engine = {
      {"defaultAction", "SCMP_ACT_ERRNO"},
      {"syscalls",
       {{{"names", {"read", "clone", "clone3", "unshare"}}, {"action", "SCMP_ACT_ALLOW"}},
        {{"names", {"unshare"}}, {"action", "SCMP_ACT_ALLOW"}},
        {{"names", {"setns"}}, {"action", "SCMP_ACT_ERRNO"}}}}};
  json derived = json::parse(seccomp_without_user_namespaces(engine.dump()));
  auto& rules = derived["syscalls"];
  REQUIRE(rules.size() == 7);
  CHECK(rules[0]["names"] == json{"read"});
  CHECK(rules[1]["names"] == json{"setns"});
  CHECK(rules[2]["names"] == json{"clone"});
  CHECK(rules[2]["args"][0]["op"] == "SCMP_CMP_MASKED_EQ");
  CHECK(rules[2]["args"][0]["value"] == 0x10000000);
  CHECK(rules[2]["args"][0]["valueTwo"] == 0);
  CHECK(rules[2]["action"] == "SCMP_ACT_ALLOW");
  CHECK(rules[3]["names"] == json{"clone"});
  CHECK(rules[3]["args"][0]["valueTwo"] == 0x10000000);
  CHECK(rules[3]["errnoRet"] == 1);
  CHECK(rules[4]["names"] == json{"unshare"});
  CHECK(rules[6]["names"] == json{"clone3"});
  CHECK(rules[6]["errnoRet"] == 38);
  CHECK(derived["defaultAction"] == "SCMP_ACT_ERRNO");
}

TEST_CASE("under gVisor clone3 goes through to gVisor, which answers ENOSYS itself",
          "[seccomp][gvisor]") {
  json engine = {{"defaultAction", "SCMP_ACT_ERRNO"},
                 {"syscalls",
                  {{{"names", {"read", "clone3"}}, {"action", "SCMP_ACT_ALLOW"}},
                   {{"names", {"unshare"}}, {"action", "SCMP_ACT_ALLOW"}}}}};
  json podman = json::parse(seccomp_without_user_namespaces(engine.dump()));
  json gvisor = json::parse(seccomp_for_gvisor(podman.dump()));
  auto& rules = gvisor["syscalls"];
  REQUIRE(rules.size() == podman["syscalls"].size());
  CHECK(rules.back()["names"] == json{"clone3"});
  CHECK(rules.back()["action"] == "SCMP_ACT_ALLOW");
  CHECK_FALSE(rules.back().contains("errnoRet"));
  CHECK(std::count_if(rules.begin(), rules.end(),
                      [](const json& rule) { return rule["names"] == json{"clone3"}; }) == 1);
  // user namespaces stay refused: unshare and clone with CLONE_NEWUSER get EPERM
  for (const char* name : {"clone", "unshare"}) {
    CHECK(std::count_if(rules.begin(), rules.end(), [&](const json& rule) {
            return rule["names"] == json{name} && rule.value("errnoRet", 0) == 1 &&
                   rule["args"][0]["valueTwo"] == 0x10000000;
          }) == 1);
  }
}
