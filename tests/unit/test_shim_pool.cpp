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
                    "--env=HOME=/tmp", "--env=TMPDIR=/tmp", "--env=SHELL=/bin/sh",
                    "--env=npm_config_offline=true", "--env=LANG", "--env=API_NAME",
                    "sandshim-0123456789abcdef", "python", "-c", "print(1)"});
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

TEST_CASE("pool growth: a key's target doubles while runs draw faster than it refills",
          "[pool][policy]") {
  Policy policy;
  policy.pool_size = 1;
  policy.pool_max = 4;
  policy.pool_shrink_after_ms = 60'000;
  constexpr int64_t k_room = 100;  // memory for 100 containers
  PoolDemand demand{1, 0};
  // A draw the pool kept up with: no growth.
  demand = next_pool_demand(policy, demand, PoolDraw::claimed, false, 1'000, k_room);
  CHECK(demand.target == 1);
  CHECK(demand.last_draw_ms == 1'000);
  // A miss, then a draw while a start was pending: 2, then 4, and never past the cap.
  demand = next_pool_demand(policy, demand, PoolDraw::missed, false, 2'000, k_room);
  CHECK(demand.target == 2);
  demand = next_pool_demand(policy, demand, PoolDraw::claimed, true, 3'000, k_room);
  CHECK(demand.target == 4);
  demand = next_pool_demand(policy, demand, PoolDraw::missed, true, 4'000, k_room);
  CHECK(demand.target == 4);
  // A fill is no draw: the target and the last draw stay.
  demand = next_pool_demand(policy, demand, PoolDraw::none, false, 5'000, k_room);
  CHECK(demand.target == 4);
  CHECK(demand.last_draw_ms == 4'000);
  // No draw for pool.shrink_after: back to pool.size, fill or draw alike.
  CHECK(next_pool_demand(policy, demand, PoolDraw::none, false, 64'000, k_room).target == 1);
  CHECK(next_pool_demand(policy, demand, PoolDraw::claimed, false, 64'000, k_room).target == 1);
  // A miss after the idle time grows from pool.size again.
  CHECK(next_pool_demand(policy, demand, PoolDraw::missed, false, 64'000, k_room).target == 2);
}

TEST_CASE("pool growth: the cap is max(pool.size, pool.max), and memory bounds the growth",
          "[pool][policy]") {
  Policy policy;
  policy.pool_size = 2;
  policy.pool_max = 1;  // below pool.size: the pool never grows
  CHECK(pool_cap(policy) == 2);
  CHECK(next_pool_demand(policy, {2, 0}, PoolDraw::missed, true, 1'000, 100).target == 2);
  policy.pool_max = 8;
  CHECK(pool_cap(policy) == 8);
  CHECK(next_pool_demand(policy, {2, 0}, PoolDraw::missed, false, 1'000, 100).target == 4);
  // Room for 3 containers at sandbox.memory: the target stops there, and never below pool.size.
  CHECK(next_pool_demand(policy, {4, 0}, PoolDraw::missed, false, 1'000, 3).target == 3);
  CHECK(next_pool_demand(policy, {2, 0}, PoolDraw::missed, false, 1'000, 0).target == 2);
  // A target read back larger than the cap (the file, not the policy) is cut to it.
  CHECK(next_pool_demand(policy, {20, 900}, PoolDraw::claimed, false, 1'000, 100).target == 8);
}

TEST_CASE("pool growth keys: pool.max, pool.shrink_after, pool.claim_wait", "[pool][policy]") {
  Policy policy;
  CHECK(policy.pool_max == 4);
  CHECK(policy.pool_shrink_after_ms == 60'000);
  CHECK(policy.pool_claim_wait_ms == 2'000);
  apply_settings(
      policy,
      {{"pool.max", "8", {}}, {"pool.shrink_after", "5m", {}}, {"pool.claim_wait", "0", {}}},
      Trust::full);
  CHECK(policy.pool_max == 8);
  CHECK(policy.pool_shrink_after_ms == 300'000);
  CHECK(policy.pool_claim_wait_ms == 0);
  apply_settings(policy, {{"pool.claim_wait", "500ms", {}}}, Trust::full);
  CHECK(policy.pool_claim_wait_ms == 500);
  apply_settings(policy, {{"pool.max", "2", {}}}, Trust::tighten_only);
  CHECK(policy.pool_max == 2);
  CHECK_THROWS_WITH(apply_settings(policy, {{"pool.max", "3", {}}}, Trust::tighten_only),
                    Catch::Contains("would loosen the policy"));
  CHECK_THROWS_WITH(apply_settings(policy, {{"pool.claim_wait", "soon", {}}}, Trust::full),
                    Catch::Contains("expected 0 or a duration"));
  CHECK_THROWS_WITH(apply_settings(policy, {{"pool.shrink_after", "10ms", {}}}, Trust::full),
                    Catch::Contains("expected a duration"));
}
