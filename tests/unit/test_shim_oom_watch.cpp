// The OOM decision from the container's watched events: what the stream showed decides, and only
// a stream that was never confirmed (or broke before the end) sends the caller to the event log.
#include <catch2/catch.hpp>
#include <chrono>

#include "engine/engine_api.hpp"
#include "engine/oom_watch.hpp"
#include "test_engine_support.hpp"
#include "test_shim_support.hpp"

using namespace std::chrono_literals;
using sandshim::shim::apply_event;
using sandshim::shim::Engine;
using sandshim::shim::OomFacts;
using sandshim::shim::OomWatch;
using sandshim::test::ScratchDir;
using namespace sandshim::test::engine_server;

namespace {

std::string event_line(const std::string& action) {
  return R"({"Type":"container","Action":")" + action +
         R"(","Actor":{"ID":"c1","Attributes":{"name":"sandshim-r1"}}})"
         "\n";
}

// An engine whose event stream sends `actions`, then stays open.
TestEngine::Handler streams(std::vector<std::string> actions) {
  return [actions](Socket& socket, const Request&, TestEngine& self) {
    write_raw(socket, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (const auto& action : actions) {
      write_raw(socket, chunk(event_line(action)));
    }
    self.stall();
  };
}

Engine engine_at(const TestEngine& engine) {
  return Engine{"docker", "/nonexistent/docker", {}, "unix://" + engine.path().string(), {}};
}

sandshim::engine::Event event(const std::string& action) {
  sandshim::engine::Event e;
  e.action = action;
  return e;
}

}  // namespace

TEST_CASE("an oom event marks the OOM, a die or destroy settles the container", "[oom_watch]") {
  OomFacts facts;
  facts = apply_event(facts, event("create"));
  CHECK_FALSE(facts.oom);
  CHECK_FALSE(facts.settled);
  facts = apply_event(facts, event("oom"));
  CHECK(facts.oom);
  CHECK_FALSE(facts.settled);
  CHECK(apply_event(facts, event("die")).settled);
  CHECK(apply_event(OomFacts{}, event("destroy")).settled);
  CHECK_FALSE(apply_event(OomFacts{}, event("destroy")).oom);
}

TEST_CASE("the watched stream decides: oom, or the end without one", "[oom_watch]") {
  ScratchDir dir;
  SECTION("oom before the end") {
    TestEngine engine(dir, streams({"create", "start", "oom", "die", "destroy"}));
    OomWatch watch(engine_at(engine), "sandshim-r1");
    REQUIRE(watch.watching());
    CHECK(watch.oom_killed(100ms, 5s) == true);
    CHECK(engine.targets().front().find("sandshim-r1") != std::string::npos);
  }
  SECTION("an oom reported just after the end") {
    TestEngine engine(dir, streams({"create", "start", "die", "oom"}));
    OomWatch watch(engine_at(engine), "sandshim-r1");
    CHECK(watch.oom_killed(2s, 5s) == true);
  }
  SECTION("the end without an oom") {
    TestEngine engine(dir, streams({"create", "start", "die", "destroy"}));
    OomWatch watch(engine_at(engine), "sandshim-r1");
    CHECK(watch.oom_killed(100ms, 5s) == false);
    CHECK(watch.facts().settled);
  }
  SECTION("a healthy stream that reports nothing within the grace") {
    TestEngine engine(dir, streams({}));
    OomWatch watch(engine_at(engine), "sandshim-r1");
    CHECK(watch.oom_killed(100ms, 100ms) == false);
  }
}

TEST_CASE("without a confirmed stream the caller asks the event log", "[oom_watch]") {
  ScratchDir dir;
  SECTION("refused") {
    TestEngine engine(dir, answers(http::status::bad_request, R"({"message":"no"})"));
    OomWatch watch(engine_at(engine), "sandshim-r1");
    CHECK_FALSE(watch.oom_killed(100ms, 5s).has_value());
  }
  SECTION("silent") {
    TestEngine engine(dir, [](Socket&, const Request&, TestEngine& self) { self.stall(); });
    OomWatch watch(engine_at(engine), "sandshim-r1");
    CHECK_FALSE(watch.oom_killed(100ms, 100ms).has_value());
  }
  SECTION("no engine on the socket, or a remote one") {
    Engine nobody{
        "docker", "/nonexistent/docker", {}, "unix://" + (dir.path() / "x.sock").string(), {}};
    CHECK_FALSE(OomWatch(nobody, "sandshim-r1").watching());
    Engine remote{"docker", "/nonexistent/docker", {}, "tcp://builder:2376", {}};
    OomWatch watch(remote, "sandshim-r1");
    CHECK_FALSE(watch.watching());
    CHECK(watch.fd() == -1);
    CHECK_FALSE(watch.oom_killed(100ms, 100ms).has_value());
  }
}

TEST_CASE("only a local endpoint may bind-mount the workspace", "[oom_watch][engine_api]") {
  using sandshim::shim::remote_mount_refusal;
  CHECK_FALSE(remote_mount_refusal(Engine{"docker", "/usr/bin/docker", {}, "", {}}));
  CHECK_FALSE(remote_mount_refusal(Engine{"docker", "/usr/bin/docker", {}, "unix:///x.sock", {}}));
  auto refusal = remote_mount_refusal(Engine{"docker", "/usr/bin/docker", {}, "tcp://h:2376", {}});
  REQUIRE(refusal);
  CHECK(refusal->starts_with("engine.endpoint \"tcp://h:2376\" is not on this machine"));
  // docker's ssh:// ships the workspace; podman's does not, and a malformed one is named.
  CHECK_FALSE(remote_mount_refusal(Engine{"docker", "/usr/bin/docker", {}, "ssh://me@h", {}}));
  refusal = remote_mount_refusal(Engine{"podman", "/usr/bin/podman", {}, "ssh://me@h", {}});
  REQUIRE(refusal);
  CHECK_THAT(*refusal, Catch::Contains("podman's remote client would bind-mount"));
  refusal = remote_mount_refusal(Engine{"docker", "/usr/bin/docker", {}, "ssh://-oX=y", {}});
  REQUIRE(refusal);
  CHECK_THAT(*refusal, Catch::Contains("is not ssh://[user@]host[:port]"));
}
