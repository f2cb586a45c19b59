#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "engine/enforcement.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SANDSHIM_TEST_DATA_DIR) + "/engine_info/" + name);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("rootful docker on cgroup v1 enforces every limit", "[enforcement]") {
  EngineFacts facts = parse_docker_info(fixture("docker_rootful_cgroup1.json"));
  CHECK(facts.kind == "docker");
  CHECK(facts.server_version == "20.10.24+dfsg1");
  CHECK(facts.cgroup_version == "1");
  CHECK(facts.cgroup_driver == "cgroupfs");
  CHECK(facts.runtime == "runc");
  CHECK_FALSE(facts.rootless);
  CHECK(facts.seccomp);
  Enforcement enforcement = assess_enforcement(facts);
  CHECK(enforcement.enforced == Names{"memory", "swap", "cpus", "pids"});
  CHECK(enforcement.unenforced.empty());
  CHECK(enforcement.reason.empty());
  CHECK(describe_enforcement(enforcement) == "enforced=memory,swap,cpus,pids");
}

TEST_CASE("rootless docker on cgroup v1 enforces no limit", "[enforcement]") {
  EngineFacts facts = parse_docker_info(fixture("docker_rootless_cgroup1.json"));
  CHECK(facts.rootless);
  CHECK(facts.warnings.size() == 1);
  Enforcement enforcement = assess_enforcement(facts);
  CHECK(enforcement.enforced.empty());
  CHECK(enforcement.unenforced == Names{"memory", "swap", "cpus", "pids"});
  CHECK(describe_enforcement(enforcement) == "enforced= unenforced=memory,swap,cpus,pids");
  CHECK(refusal_message(facts, enforcement) ==
        "docker cannot enforce the memory, swap, cpus and pids limits: rootless docker on "
        "cgroup v1 ignores resource limits; use a rootful engine, or a cgroup v2 host "
        "(systemd.unified_cgroup_hierarchy=1) with the controllers delegated; or set "
        "limits.unenforced = accept to run without them");
}

TEST_CASE("a rootless engine on cgroup v1 drops limits even when its flags claim them",
          "[enforcement]") {
  EngineFacts facts = parse_docker_info(fixture("docker_rootful_cgroup1.json"));
  facts.rootless = true;
  CHECK(assess_enforcement(facts).enforced.empty());
}

TEST_CASE("docker on cgroup v2 without the pids controller cannot enforce pids", "[enforcement]") {
  EngineFacts facts = parse_docker_info(fixture("docker_cgroup2_no_pids.json"));
  CHECK(facts.cgroup_version == "2");
  CHECK(facts.apparmor);
  CHECK(facts.runtime == "crun");
  Enforcement enforcement = assess_enforcement(facts);
  CHECK(enforcement.enforced == Names{"memory", "swap", "cpus"});
  CHECK(enforcement.unenforced == Names{"pids"});
  CHECK(refusal_message(facts, enforcement) ==
        "docker cannot enforce the pids limit: the host's cgroups lack pids; enable them "
        "(`swapaccount=1` and `cgroup_enable=memory` on the kernel command line); or set "
        "limits.unenforced = accept to run without them");
}

TEST_CASE("rootless podman on cgroup v1 enforces no limit", "[enforcement]") {
  EngineFacts facts = parse_podman_info(fixture("podman_rootless_cgroup1.json"));
  CHECK(facts.kind == "podman");
  CHECK(facts.server_version == "4.3.1");
  CHECK(facts.cgroup_version == "1");
  CHECK(facts.rootless);
  Enforcement enforcement = assess_enforcement(facts);
  CHECK(enforcement.enforced.empty());
  CHECK(enforcement.unenforced == Names{"memory", "swap", "cpus", "pids"});
  CHECK_THAT(enforcement.reason, Catch::StartsWith("rootless podman on cgroup v1 ignores"));
}

TEST_CASE("rootful podman on cgroup v1 enforces every limit", "[enforcement]") {
  EngineFacts facts = parse_podman_info(fixture("podman_rootful_cgroup1.json"));
  CHECK_FALSE(facts.rootless);
  CHECK(assess_enforcement(facts).unenforced.empty());
}

TEST_CASE("rootless podman on cgroup v2 lacks the controllers not delegated", "[enforcement]") {
  EngineFacts facts = parse_podman_info(fixture("podman_rootless_cgroup2_no_pids.json"));
  CHECK(facts.cgroup_version == "2");
  Enforcement enforcement = assess_enforcement(facts);
  CHECK(enforcement.enforced == Names{"memory", "swap", "cpus"});
  CHECK(enforcement.unenforced == Names{"pids"});
  CHECK_THAT(enforcement.reason,
             Catch::StartsWith("the pids controllers are not delegated to rootless podman"));
}

TEST_CASE("an engine that did not answer is an error, never 'nothing enforced'", "[enforcement]") {
  // What docker 28 prints on stdout when the daemon is down: every field empty or false.
  CHECK_THROWS_AS(parse_docker_info(R"({"ID":"","ServerVersion":"","MemoryLimit":false})"),
                  EngineInfoError);
  CHECK_THROWS_AS(parse_docker_info("not json"), sandshim::Fatal);
  CHECK_THROWS_AS(parse_podman_info("[]"), sandshim::Fatal);
}

TEST_CASE("unknown or missing fields read as not enforced", "[enforcement]") {
  EngineFacts facts = parse_docker_info(R"({"ServerVersion":"27.0","MemoryLimit":"yes"})");
  CHECK(assess_enforcement(facts).enforced.empty());
  EngineFacts podman = parse_podman_info(R"({"host":{"cgroupVersion":"v2"}})");
  CHECK(assess_enforcement(podman).enforced.empty());
}

TEST_CASE("facts survive the cache's JSON", "[enforcement]") {
  EngineFacts facts = parse_docker_info(fixture("docker_cgroup2_no_pids.json"));
  EngineFacts back = facts_from_json(facts_to_json(facts));
  CHECK(back.kind == facts.kind);
  CHECK(back.cgroup_version == "2");
  CHECK(back.memory);
  CHECK_FALSE(back.pids);
  CHECK(back.warnings == facts.warnings);
}

namespace {

// A stand-in client that prints recorded `info` JSON and counts how often it is asked: the
// cache's behaviour, not the engine's, is under test here.
struct FakeEngine {
  ScratchDir dir;
  Engine engine;
  FactsCache cache;

  explicit FakeEngine(const std::string& info_fixture) {
    dir.write("info.json", fixture(info_fixture));
    fs::path client =
        dir.write("docker", "#!/bin/sh\necho x >> \"" + (dir.path() / "calls").string() +
                                "\"\ncat \"" + (dir.path() / "info.json").string() + "\"\n");
    ::chmod(client.c_str(), 0755);
    dir.write("run/docker.sock", "");
    dir.write("run/docker.pid", "100\n");
    engine = Engine{"docker",
                    client,
                    {"PATH=/usr/bin:/bin"},
                    "unix://" + (dir.path() / "run" / "docker.sock").string(),
                    {}};
    cache = FactsCache{dir.path() / "cache", std::chrono::seconds(3600), std::chrono::seconds(60)};
  }
  size_t calls() const {
    std::ifstream in(dir.path() / "calls");
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
    }
    return n;
  }
  // A restarted daemon: a new socket and pid file, maybe with other capabilities.
  void restart(const std::string& info_fixture) {
    fs::remove(dir.path() / "run" / "docker.sock");
    fs::remove(dir.path() / "run" / "docker.pid");
    dir.write("info.json", fixture(info_fixture));
    dir.write("run/docker.sock", "");
    dir.write("run/docker.pid", "2000\n");
  }
};

}  // namespace

TEST_CASE("the verdict is cached until the engine changes", "[enforcement][cache]") {
  FakeEngine fake("docker_rootful_cgroup1.json");
  CHECK(engine_facts(fake.engine, fake.cache).pids);
  CHECK(fake.calls() == 1);
  CHECK(engine_facts(fake.engine, fake.cache).pids);
  CHECK(fake.calls() == 1);

  SECTION("a restarted daemon is asked again: a stale cache never claims enforcement") {
    fake.restart("docker_cgroup2_no_pids.json");
    CHECK_FALSE(engine_facts(fake.engine, fake.cache).pids);
    CHECK(fake.calls() == 2);
  }
  SECTION("a new pid file alone (socket-activated daemon) is enough") {
    fs::remove(fake.dir.path() / "run" / "docker.pid");
    fake.dir.write("run/docker.pid", "30000\n");
    engine_facts(fake.engine, fake.cache);
    CHECK(fake.calls() == 2);
  }
  SECTION("another client binary is asked again") {
    fake.dir.write("docker", "#!/bin/sh\necho x >> \"" + (fake.dir.path() / "calls").string() +
                                 "\"\ncat \"" + (fake.dir.path() / "info.json").string() +
                                 "\"\n# v2\n");
    engine_facts(fake.engine, fake.cache);
    CHECK(fake.calls() == 2);
  }
  SECTION("an expired entry is asked again") {
    fake.cache.local_ttl = std::chrono::seconds(0);
    engine_facts(fake.engine, fake.cache);
    CHECK(fake.calls() == 2);
  }
}

TEST_CASE("a cache entry for another identity is ignored", "[enforcement][cache]") {
  FakeEngine fake("docker_rootless_cgroup1.json");
  engine_facts(fake.engine, fake.cache);
  // Forge every entry to claim full enforcement under a different identity.
  for (const auto& entry : fs::directory_iterator(fake.cache.file)) {
    std::ofstream(entry.path()) << R"({"identity":"v1 docker elsewhere","written_ms":)"
                                << sandshim::wall_clock_ms() << R"(,"facts":)"
                                << facts_to_json(
                                       parse_docker_info(fixture("docker_rootful_cgroup1.json")))
                                << "}\n";
  }
  CHECK_FALSE(engine_facts(fake.engine, fake.cache).pids);
  CHECK(fake.calls() == 2);
}

TEST_CASE("an engine that fails its info is reported with its own words, and not cached",
          "[enforcement][cache]") {
  FakeEngine fake("docker_rootful_cgroup1.json");
  fake.dir.write("docker",
                 "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///x.sock.' >&2\n"
                 "exit 1\n");
  try {
    engine_facts(fake.engine, fake.cache);
    FAIL("no error");
  } catch (const EngineInfoError& e) {
    CHECK(std::string(e.what()) == "Cannot connect to the Docker daemon at unix:///x.sock.");
  }
  std::error_code ec;
  CHECK((!fs::exists(fake.cache.file) || fs::is_empty(fake.cache.file, ec)));
}

TEST_CASE("the identity names the local daemon's socket and pid file, never for a remote engine",
          "[enforcement][cache]") {
  Engine local{"docker", "/bin/sh", {}, "", {}};
  CHECK_THAT(engine_identity(local), Catch::Contains("/var/run/docker.sock="));
  CHECK_THAT(engine_identity(local), Catch::Contains("/var/run/docker.pid="));
  Engine remote{"docker", "/bin/sh", {}, "ssh://builder@example.invalid", {}};
  CHECK_THAT(engine_identity(remote), !Catch::Contains("docker.sock"));
  CHECK_THAT(engine_identity(remote), Catch::Contains("endpoint=ssh://builder@example.invalid"));
  Engine podman{"podman", "/bin/sh", {}, "", {}};
  CHECK_THAT(engine_identity(podman), Catch::Contains("/etc/containers/containers.conf="));
}
