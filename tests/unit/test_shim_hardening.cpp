#include <algorithm>
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "policy/workspace.hpp"
#include "run/hardening.hpp"
#include "test_shim_spec_sample.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;

using sandshim::test::has;
using sandshim::test::index_of;

namespace {

RunSpec sample_spec() {
  return sandshim::test::sample_run_spec();
}

}  // namespace

TEST_CASE("the default run carries every hardening flag", "[hardening]") {
  auto args = build_run_arguments(Policy{}, sample_spec());
  CHECK(args.front() == "run");
  for (const char* flag :
       {"--rm",
        "--init",
        "--pull=never",
        "--log-driver=none",
        "--network=none",
        "--cap-drop=ALL",
        "--security-opt=no-new-privileges:true",
        "--read-only",
        "--tmpfs=/tmp:rw,noexec,nosuid,nodev,size=67108864",
        "--memory=536870912",
        "--memory-swap=536870912",
        "--cpus=1",
        "--pids-limit=64",
        "--ulimit=nofile=1024:1024",
        "--ulimit=nproc=1024:1024",
        "--ulimit=core=0:0",
        "--user=1000:1000",
        "--hostname=sandbox",
        "--name=sandshim-0123456789abcdef",
        "--label=org.sandshim.run=0123456789abcdef",
        "--label=org.sandshim.deadline=1700000000",
        "--env=HOME=/tmp",
        "--interactive",
        "--workdir=/work/project/src",
        "--mount=type=bind,source=/work/project,target=/work/project,readonly"}) {
    INFO(flag);
    CHECK(has(args, flag));
  }
  CHECK_FALSE(has(args, "--tty"));
}

TEST_CASE("caller strings only follow the image", "[hardening]") {
  auto spec = sample_spec();
  auto args = build_run_arguments(Policy{}, spec);
  size_t image_at = index_of(args, spec.image);
  REQUIRE(image_at < args.size());
  CHECK(std::vector<std::string>(args.begin() + static_cast<long>(image_at) + 1, args.end()) ==
        spec.command);
  CHECK(index_of(args, "--network=host") > image_at);
}

TEST_CASE("environment values never appear in the arguments", "[hardening]") {
  auto args = build_run_arguments(Policy{}, sample_spec());
  CHECK(has(args, "--env=LANG"));
  CHECK(has(args, "--env=PYTHONPATH"));
  for (const auto& arg : args) {
    CHECK(arg.find("C.UTF-8") == std::string::npos);
  }
}

TEST_CASE("policy values reach the flags", "[hardening]") {
  Policy policy;
  policy.network = Network::bridge;
  policy.workspace_mode = WorkspaceMode::rw;
  policy.memory_bytes = 64ULL << 20;
  policy.cpus = 0.5;
  policy.pids = 16;
  auto spec = sample_spec();
  spec.tty = true;
  auto args = build_run_arguments(policy, spec);
  CHECK(has(args, "--network=bridge"));
  CHECK(has(args, "--memory=67108864"));
  CHECK(has(args, "--memory-swap=67108864"));
  CHECK(has(args, "--cpus=0.5"));
  CHECK(has(args, "--pids-limit=16"));
  CHECK(has(args, "--tty"));
  CHECK(has(args, "--mount=type=bind,source=/work/project,target=/work/project"));
}

TEST_CASE("mount paths cannot change the mount", "[hardening][workspace]") {
  CHECK(bind_mount_spec("/w/a,readonly=false", true) ==
        "type=bind,\"source=/w/a,readonly=false\",\"target=/w/a,readonly=false\",readonly");
  CHECK(bind_mount_spec("/w/say \"hi\"", true) ==
        "type=bind,\"source=/w/say \"\"hi\"\"\",\"target=/w/say \"\"hi\"\"\",readonly");
  CHECK(bind_mount_spec("/w/a:b", true) == "type=bind,source=/w/a:b,target=/w/a:b,readonly");
  CHECK_THROWS_AS(bind_mount_spec("/w/new\nline", true), sandshim::Fatal);
  CHECK_THROWS_AS(bind_mount_spec("relative", true), sandshim::Fatal);
}

TEST_CASE("a broker's run waits on the workspace gate; a direct run has none",
          "[hardening][gate]") {
  RunSpec spec = sample_spec();
  auto direct = build_run_arguments(Policy{}, spec);
  CHECK_FALSE(has(direct, "--entrypoint=/.sandshim/gate"));
  CHECK(direct.back() == "print(1)");
  spec.gate = WorkspaceGate{"/usr/libexec/sandshim/sandshim-gate", "2049:17", "2049:18", {}};
  auto gated = build_run_arguments(Policy{}, spec);
  CHECK(has(gated,
            "--mount=type=bind,source=/usr/libexec/sandshim/sandshim-gate,"
            "target=/.sandshim/gate,readonly"));
  CHECK(has(gated, "--entrypoint=/.sandshim/gate"));
  // After the image: the gate's arguments, then the caller's command exactly as given.
  size_t image = index_of(gated, spec.image);
  std::vector<std::string> tail(gated.begin() + static_cast<std::ptrdiff_t>(image) + 1,
                                gated.end());
  std::vector<std::string> expected = {"/work/project", "2049:17", "2049:18", "--"};
  expected.insert(expected.end(), spec.command.begin(), spec.command.end());
  CHECK(tail == expected);
  spec.warm = true;
  auto exec = build_exec_arguments(Policy{}, spec);
  size_t name = index_of(exec, spec.container_name());
  CHECK(exec[name + 1] == "/.sandshim/gate");
  CHECK(exec[name + 2] == "/work/project");
}

TEST_CASE("masks, writable paths and the cache follow the workspace mount", "[hardening][masks]") {
  RunSpec spec = sample_spec();
  spec.masks.paths = {{"/work/project/.env", false}};
  spec.mask_sources = {"/state/empty", "/state/empty.d"};
  spec.writable_mounts = {{"/work/project/out", "/work/project/out", false}};
  spec.cache_dir = "/state/cache/abc-1000";
  auto args = build_run_arguments(Policy{}, spec);
  size_t workspace =
      index_of(args, "--mount=type=bind,source=/work/project,target=/work/project,readonly");
  size_t writable =
      index_of(args, "--mount=type=bind,source=/work/project/out,target=/work/project/out");
  size_t cache =
      index_of(args, "--mount=type=bind,source=/state/cache/abc-1000,target=/sandshim-cache");
  size_t mask =
      index_of(args, "--mount=type=bind,source=/state/empty,target=/work/project/.env,readonly");
  CHECK(workspace < writable);
  CHECK(writable < cache);
  CHECK(cache < mask);
  CHECK(mask < args.size());
  CHECK(has(args, "--env=PIP_CACHE_DIR=/sandshim-cache/pip"));
  spec.dialect.kind = "podman";
  CHECK(has(
      build_run_arguments(Policy{}, spec),
      "--mount=type=bind,source=/state/cache/abc-1000,target=/sandshim-cache,noexec,nosuid,nodev"));
}

TEST_CASE("runsc is named on run for docker and before run for podman", "[hardening][gvisor]") {
  Policy policy;
  policy.runtime = Runtime::runsc;
  RunSpec spec = sample_spec();
  auto docker = build_run_arguments(policy, spec);
  CHECK(docker.front() == "run");
  CHECK(has(docker, "--runtime=runsc-nonet"));
  policy.network = Network::bridge;
  CHECK(has(build_run_arguments(policy, spec), "--runtime=runsc"));
  policy.network = Network::none;
  spec.dialect.kind = "podman";
  spec.seccomp_profile = "/state/seccomp/podman.json";
  auto podman = build_run_arguments(policy, spec);
  CHECK(std::vector<std::string>(podman.begin(), podman.begin() + 4) ==
        std::vector<std::string>{"--runtime=runsc", "--runtime-flag=oci-seccomp",
                                 "--runtime-flag=network=none", "run"});
  CHECK(std::count(podman.begin(), podman.end(), "--runtime=runsc") == 1);
  CHECK(has(podman, "--security-opt=seccomp=/state/seccomp/podman.json"));
  CHECK_FALSE(has(build_run_arguments(Policy{}, sample_spec()), "--runtime=runc"));
}

TEST_CASE("under runsc sandbox.pids is gVisor's RLIMIT_NPROC, the host cgroup a backstop",
          "[hardening][gvisor]") {
  Policy policy;
  policy.pids = 64;
  auto runc = build_run_arguments(policy, sample_spec());
  CHECK(has(runc, "--pids-limit=64"));
  CHECK(has(runc, "--ulimit=nproc=1024:1024"));
  policy.runtime = Runtime::runsc;
  auto runsc = build_run_arguments(policy, sample_spec());
  CHECK(has(runsc, "--pids-limit=1280"));
  CHECK(has(runsc, "--ulimit=nproc=64:64"));
  policy.nproc = 32;
  CHECK(has(build_run_arguments(policy, sample_spec()), "--ulimit=nproc=32:32"));
}

TEST_CASE("a broker's binds inside the workspace: the gate checks each before the command",
          "[hardening][gate]") {
  RunSpec spec = sample_spec();
  spec.gate =
      WorkspaceGate{"/usr/libexec/sandshim/sandshim-gate",
                    "2049:17",
                    "2049:18",
                    {{"/work/project/.git", "2049:30"}, {"/work/project/CLAUDE.md", "2049:31"}}};
  auto gated = build_run_arguments(Policy{}, spec);
  size_t image = index_of(gated, spec.image);
  std::vector<std::string> tail(gated.begin() + static_cast<std::ptrdiff_t>(image) + 1,
                                gated.begin() + static_cast<std::ptrdiff_t>(image) + 9);
  CHECK(tail == std::vector<std::string>{"/work/project", "2049:17", "2049:18",
                                         "/work/project/.git", "2049:30", "/work/project/CLAUDE.md",
                                         "2049:31", "--"});
}

TEST_CASE(
    "a broker's run: the broker's group first, the caller's beside it; host mode's script "
    "environment by value",
    "[hardening]") {
  RunSpec spec = sample_spec();
  spec.user = "1000:995";
  spec.supplementary_gids = {1000};
  spec.host_environment = {{"PYTHONUSERBASE", "/home/u/.local"}};
  auto args = build_run_arguments(Policy{}, spec);
  CHECK(has(args, "--user=1000:995"));
  CHECK(has(args, "--group-add=1000"));
  CHECK(has(args, "--env=PYTHONUSERBASE=/home/u/.local"));
  CHECK(index_of(args, "--group-add=1000") < index_of(args, spec.image));
}
