#include <algorithm>
#include <catch2/catch.hpp>

#include "pool/pool.hpp"
#include "run/hardening.hpp"

using namespace sandshim::shim;

namespace {

RunSpec pool_spec() {
  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.invoked_as = "python";
  spec.command = {"python", "-c", "print(1)"};
  spec.cwd = "/work/project/src";
  spec.workspace = "/work/project";
  spec.image = "sandshim/python:bookworm";
  spec.env = {{"LANG", "C.UTF-8"}, {"API_NAME", "x"}};
  spec.user = "1000:1000";
  spec.deadline_epoch_s = 1700000000;
  return spec;
}

// The flags that confine a container: everything before the image but stdio.
std::vector<std::string> confinement(std::vector<std::string> args, const std::string& image) {
  args.erase(std::find(args.begin(), args.end(), image), args.end());
  std::erase_if(args, [](const std::string& arg) {
    return arg == "--interactive" || arg == "--tty" || arg == "--detach" ||
           arg.starts_with("--env=") || arg.starts_with("--workdir=") ||
           arg.starts_with("--label=org.sandshim.pool");
  });
  return args;
}

}  // namespace

TEST_CASE("a pool container is confined exactly as a cold run", "[pool][hardening]") {
  RunSpec spec = pool_spec();
  auto cold = build_run_arguments(Policy{}, spec);
  RunSpec idle = spec;
  idle.env.clear();
  idle.command.clear();
  auto warm = build_pool_arguments(Policy{}, idle, {"--label=org.sandshim.pool=k"}, 640);
  CHECK(confinement(warm, spec.image) == confinement(cold, spec.image));
  CHECK(std::find(warm.begin(), warm.end(), "--detach") != warm.end());
  CHECK(std::find(warm.begin(), warm.end(), "--env=HOME=/tmp") != warm.end());
  // No environment of a run is baked into the pool container: it comes with each exec.
  CHECK(std::none_of(warm.begin(), warm.end(),
                     [](const std::string& arg) { return arg == "--env=LANG"; }));
  std::vector<std::string> tail(warm.end() - 4, warm.end());
  CHECK(tail == std::vector<std::string>{spec.image, "sh", "-c",
                                         "trap '' HUP INT QUIT TERM; exec sleep 640"});
}

TEST_CASE("a warm run's exec carries its user, cwd, environment names and argv", "[pool]") {
  RunSpec spec = pool_spec();
  auto args = build_exec_arguments(Policy{}, spec);
  CHECK(args == std::vector<std::string>{
                    "exec", "--interactive", "--user=1000:1000", "--workdir=/work/project/src",
                    "--env=HOME=/tmp", "--env=TMPDIR=/tmp", "--env=SHELL=/bin/sh", "--env=LANG",
                    "--env=API_NAME", "sandshim-0123456789abcdef", "python", "-c", "print(1)"});
  spec.tty = true;
  args = build_exec_arguments(Policy{}, spec);
  CHECK(args[2] == "--tty");
}

TEST_CASE("the pool key changes with the policy, image, workspace and user", "[pool]") {
  RunSpec spec = pool_spec();
  Policy policy;
  std::string key = pool_key(policy, spec);
  CHECK(key.size() == 24);
  CHECK(pool_key(policy, spec) == key);
  RunSpec other_cwd = spec;
  other_cwd.cwd = "/work/project";  // the cwd comes with the exec: same pool
  CHECK(pool_key(policy, other_cwd) == key);
  Policy tighter = policy;
  tighter.memory_bytes = 256ULL << 20;
  CHECK(pool_key(tighter, spec) != key);
  RunSpec other = spec;
  other.image = "sandshim/node:bookworm";
  CHECK(pool_key(policy, other) != key);
  other = spec;
  other.workspace = "/work/other";
  CHECK(pool_key(policy, other) != key);
  other = spec;
  other.user = "1001:1001";
  CHECK(pool_key(policy, other) != key);
}

TEST_CASE("pool keys: a workspace file may only shrink the pool and its idle time",
          "[pool][policy]") {
  Policy policy;
  apply_settings(policy, {{"pool.size", "4", {}}, {"pool.idle_ttl", "5m", {}}}, Trust::full);
  CHECK(policy.pool_size == 4);
  CHECK(policy.pool_idle_ttl_ms == 300'000);
  apply_settings(policy, {{"pool.size", "2", {}}, {"pool.idle_ttl", "1m", {}}},
                 Trust::tighten_only);
  CHECK(policy.pool_size == 2);
  CHECK_THROWS_WITH(apply_settings(policy, {{"pool.size", "3", {}}}, Trust::tighten_only),
                    Catch::Contains("would loosen the policy"));
  CHECK_THROWS_WITH(apply_settings(policy, {{"pool.size", "33", {}}}, Trust::full),
                    Catch::Contains("expected a whole number from 0 to 32"));
  CHECK_THROWS_WITH(apply_settings(policy, {{"pool.idle_ttl", "10ms", {}}}, Trust::full),
                    Catch::Contains("expected a duration"));
}
