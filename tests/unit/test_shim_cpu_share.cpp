#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "policy/workspace.hpp"
#include "run/cpu_share.hpp"
#include "run/hardening.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;

using sandshim::test::has;

TEST_CASE("a quota below the host's CPUs takes that many CPUs, rounded up", "[cpu_share]") {
  const std::vector<int> four = {0, 1, 2, 3};
  CHECK(cpuset_for(1, {0, 1}, "run").size() == 1);
  CHECK(cpuset_for(0.5, four, "run").find(',') == std::string::npos);  // 0.5 sees one CPU
  std::string three = cpuset_for(2.5, four, "run");
  CHECK(std::count(three.begin(), three.end(), ',') == 2);
  CHECK(cpus_seen(0.5, 4) == 1);
  CHECK(cpus_seen(1.0000000001, 4) == 1);
  CHECK(cpus_seen(2.5, 4) == 3);
}

TEST_CASE("a quota covering every usable CPU leaves the cpuset alone", "[cpu_share]") {
  CHECK(cpuset_for(2, {0, 1}, "run").empty());
  CHECK(cpuset_for(8, {0, 1}, "run").empty());
  CHECK(cpuset_for(1, {}, "run").empty());  // affinity unknown: the quota alone
  CHECK(cpus_seen(8, 2) == 2);
  CHECK(quota_within(8, 2) == 2);  // the engine refuses a quota above the host's CPUs
  CHECK(quota_within(0.5, 2) == 0.5);
  CHECK(quota_within(8, 0) == 8);  // unknown: as configured
}

TEST_CASE("the cpuset is taken from the usable CPUs, spread by the run id", "[cpu_share]") {
  const std::vector<int> usable = {2, 5, 7, 9};
  std::vector<std::string> seen;
  for (int i = 0; i < 32; ++i) {
    std::string set = cpuset_for(1, usable, "run" + std::to_string(i));
    CHECK((set == "2" || set == "5" || set == "7" || set == "9"));
    if (std::find(seen.begin(), seen.end(), set) == seen.end()) {
      seen.push_back(set);
    }
  }
  CHECK(seen.size() > 1);  // concurrent runs do not all land on one CPU
  CHECK(cpuset_for(1, usable, "same") == cpuset_for(1, usable, "same"));
  CHECK(cpuset_for(3, {0, 1, 2, 3}, "x") != "");
}

TEST_CASE("the online CPUs read as the count the cpuset holds", "[cpu_share]") {
  CHECK(online_cpus_text(1) == "0\n");
  CHECK(online_cpus_text(3) == "0-2\n");
}

TEST_CASE("the run's flags carry the cpuset and the online file only below the host's CPUs",
          "[cpu_share][hardening]") {
  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.image = "img";
  spec.command = {"true"};
  spec.user = "1000:1000";
  spec.cwd = spec.workspace = "/w";
  spec.cpu_choices = {0, 1};
  spec.cpu_online_file = "/state/cpus/online-1";
  Policy policy;
  policy.cpus = 1;
  auto args = build_run_arguments(policy, spec);
  CHECK((has(args, "--cpuset-cpus=0") || has(args, "--cpuset-cpus=1")));
  CHECK(
      has(args, "--mount=" + bind_mount_spec("/state/cpus/online-1", k_online_cpus_target, true)));
  policy.cpus = 6;
  args = build_run_arguments(policy, spec);
  CHECK(has(args, "--cpus=2"));
  CHECK(std::none_of(args.begin(), args.end(),
                     [](const std::string& a) { return a.starts_with("--cpuset-cpus"); }));
  CHECK(std::none_of(args.begin(), args.end(), [](const std::string& a) {
    return a.find(k_online_cpus_target) != std::string::npos;
  }));
}
