// The engine dialects: what docker and podman are asked for the same sandbox. Fake clients (empty
// executables in a scratch directory) stand in for the real ones; the integration suites run both
// real engines.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "engine/engine.hpp"
#include "policy/policy.hpp"
#include "run/hardening.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::test::ScratchDir;

using sandshim::test::has;
using sandshim::test::index_of;

namespace {

// An executable that does nothing, named like an engine client or an init.
std::string fake_executable(const ScratchDir& dir, const std::string& name) {
  auto path = dir.write("bin/" + name, "#!/bin/sh\nexit 0\n");
  ::chmod(path.c_str(), 0755);
  return path.string();
}

RunSpec podman_spec(const std::string& search_path) {
  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.command = {"python", "-c", "print(1)"};
  spec.cwd = "/work/project";
  spec.workspace = "/work/project";
  spec.image = "sandshim/python:bookworm";
  spec.env = {{"LANG", "C.UTF-8"}};
  spec.user = "1000:1000";
  spec.dialect = make_dialect("podman", search_path);
  return spec;
}

}  // namespace

TEST_CASE("docker's dialect adds nothing to the common hardening", "[engine]") {
  EngineDialect docker;
  CreateSpec create;
  create.init = create.read_only_rootfs = true;
  docker.complete(create);
  CHECK(create.init_path.empty());
  CHECK_FALSE(create.read_only_tmpfs);
  CHECK(create.cgroups.empty());
  CHECK(create.unset_env.empty());
  RunSpec spec = podman_spec("/nonexistent");
  spec.dialect = docker;
  auto args = build_run_arguments(Policy{}, spec);
  for (const char* podman_only :
       {"--read-only-tmpfs=false", "--cgroups=enabled", "--unsetenv=TERM"}) {
    CHECK_FALSE(has(args, podman_only));
  }
}

TEST_CASE("podman's run carries docker's hardening plus what podman needs for the same sandbox",
          "[engine]") {
  ScratchDir dir;
  std::string tini = fake_executable(dir, "tini-static");
  auto spec = podman_spec((dir.path() / "bin").string());
  auto args = build_run_arguments(Policy{}, spec);
  for (const std::string& flag :
       {std::string("--rm"), std::string("--init"), "--init-path=" + tini,
        std::string("--read-only"), std::string("--read-only-tmpfs=false"),
        std::string("--cgroups=enabled"), std::string("--network=none"),
        std::string("--cap-drop=ALL"), std::string("--security-opt=no-new-privileges:true"),
        std::string("--pids-limit=64"), std::string("--memory-swap=536870912"),
        std::string("--ulimit=nofile=1024:1024"), std::string("--unsetenv=TERM"),
        std::string("--pull=never"), std::string("--log-driver=none")}) {
    INFO(flag);
    CHECK(has(args, flag));
  }
  // Caller strings still come only after the image.
  CHECK(index_of(args, "--unsetenv=TERM") < index_of(args, spec.image));
  CHECK(args.back() == "print(1)");
}

TEST_CASE("podman keeps TERM when the caller passes it or has a terminal", "[engine]") {
  ScratchDir dir;
  auto spec = podman_spec(dir.path().string());
  spec.env.emplace_back("TERM", "xterm-256color");
  CHECK_FALSE(has(build_run_arguments(Policy{}, spec), "--unsetenv=TERM"));
  spec = podman_spec(dir.path().string());
  spec.tty = true;
  CHECK_FALSE(has(build_run_arguments(Policy{}, spec), "--unsetenv=TERM"));
}

TEST_CASE("podman without tini-static falls back to its own init", "[engine]") {
  ScratchDir dir;
  auto dialect = make_dialect("podman", (dir.path() / "bin").string());
  CHECK(dialect.init_path.empty());
  CreateSpec create;
  create.init = true;
  dialect.complete(create);
  CHECK(create.init);
  CHECK(create.init_path.empty());
  CHECK(create.cgroups == "enabled");
}

TEST_CASE("the dialects' formats for ps, events and image ids", "[engine]") {
  EngineDialect docker;
  EngineDialect podman = make_dialect("podman", "/nonexistent");
  CHECK(docker.label_format("org.sandshim.deadline") == "{{.Label \"org.sandshim.deadline\"}}");
  CHECK(podman.label_format("org.sandshim.deadline") ==
        "{{index .Labels \"org.sandshim.deadline\"}}");
  CHECK(docker.event_format() == "{{.Action}}");
  CHECK(podman.event_format() == "{{.Status}}");
  CHECK(podman.normalize_image_id("bdd3f4842b04") == "sha256:bdd3f4842b04");
  CHECK(docker.normalize_image_id("sha256:bdd3f4842b04") == "sha256:bdd3f4842b04");
  CHECK(podman.normalize_image_id("") == "");
  CHECK(podman.info_command() == "`podman info`");
  CHECK_THAT(docker.permission_hint(), Catch::Contains("usermod -aG docker"));
  CHECK_THAT(podman.permission_hint(), !Catch::Contains("usermod -aG docker"));
}

TEST_CASE("engine.name = auto is docker when its client is found, else podman", "[engine]") {
  ScratchDir both;
  fake_executable(both, "docker");
  fake_executable(both, "podman");
  ScratchDir podman_only;
  fake_executable(podman_only, "podman");
  CHECK(resolve_engine_kind("auto", "", (both.path() / "bin").string()) == "docker");
  CHECK(resolve_engine_kind("auto", "", (podman_only.path() / "bin").string()) == "podman");
  CHECK(resolve_engine_kind("podman", "", (both.path() / "bin").string()) == "podman");
  CHECK(resolve_engine_kind("docker", "", (podman_only.path() / "bin").string()) == "docker");
  CHECK(resolve_engine_kind("auto", "/opt/bin/podman-remote", "") == "podman");
  CHECK(resolve_engine_kind("auto", "/opt/bin/docker", "") == "docker");
}

TEST_CASE("locate_engine resolves auto and gives podman its own environment and dialect",
          "[engine]") {
  ScratchDir dir;
  std::string client = fake_executable(dir, "podman");
  fake_executable(dir, "tini-static");
  Policy policy;
  policy.engine_search_path = (dir.path() / "bin").string();
  Engine engine = locate_engine(policy);
  CHECK(engine.kind == "podman");
  CHECK(engine.client == client);
  CHECK(engine.dialect.is_podman());
  CHECK(engine.dialect.init_path == (dir.path() / "bin" / "tini-static").string());
  CHECK(engine.describe() == "podman");
  for (const auto& entry : engine.env) {
    CHECK_FALSE(entry.starts_with("DOCKER_"));
  }
  policy.endpoint = "tcp://engine.example:2376";
  policy.tls_cert_path = "/etc/sandshim/tls";
  CHECK_THROWS_WITH(locate_engine(policy), Catch::Contains("podman's client has no TLS"));
  policy.endpoint = "";
  policy.engine = "docker";
  CHECK_THROWS_WITH(locate_engine(policy),
                    Catch::Contains("container engine \"docker\" not found"));
  policy.engine_search_path = "/nonexistent";
  policy.engine = "auto";
  CHECK_THROWS_WITH(locate_engine(policy), Catch::Contains("docker or podman not found"));
}

TEST_CASE("engine.name accepts docker, podman and auto, and defaults to auto", "[engine]") {
  CHECK(Policy{}.engine == "auto");
  for (const char* name : {"docker", "podman", "auto"}) {
    Policy policy;
    apply_settings(policy, {{"engine.name", name, {"test", 1}}}, Trust::full);
    CHECK(policy.engine == name);
  }
  Policy policy;
  CHECK_THROWS_WITH(apply_settings(policy, {{"engine.name", "lxc", {"test", 1}}}, Trust::full),
                    Catch::Contains("expected docker, podman or auto"));
}

TEST_CASE("podman removes at once; docker's rm --force already kills", "[engine]") {
  EngineDialect docker;
  CHECK(docker.remove_arguments("sandshim-1") ==
        std::vector<std::string>{"rm", "--force", "sandshim-1"});
  EngineDialect podman;
  podman.kind = "podman";
  // Without --time=0 podman waits 10 s on SIGTERM, which a program may ignore past its deadline.
  CHECK(podman.remove_arguments("sandshim-1") ==
        std::vector<std::string>{"rm", "--force", "--time=0", "sandshim-1"});
}
