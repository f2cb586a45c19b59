// A pool of engines (engine.endpoints): the key, the placement order, the slot and down files,
// and placement over fake clients with a stubbed ping. The soak on real engines is
// tests/integration/suite_engine_pool.sh.
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "engine/engine_pool.hpp"
#include "engine/engine_slots.hpp"
#include "engine/placement.hpp"
#include "install/doctor_engines.hpp"
#include "policy/policy.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::engine::Candidate;
using sandshim::engine::EngineSlots;
using sandshim::engine::placement_order;
using sandshim::shim::PoolEngine;
using sandshim::test::ScratchDir;

namespace {

std::string apply_error(Policy& policy, const std::string& key, const std::string& value,
                        Trust trust = Trust::full) {
  try {
    apply_settings(policy, {{key, value, {"layer.conf", 3}}}, trust);
  } catch (const sandshim::Fatal& e) {
    return e.what();
  }
  return "";
}

PoolEngine entry(const std::string& endpoint, std::optional<int64_t> max_runs = std::nullopt,
                 std::vector<std::string> labels = {}) {
  return {endpoint, "", max_runs, std::move(labels)};
}

// A policy whose docker client is an empty executable in `dir`, over two local endpoints.
Policy two_engines(const ScratchDir& dir) {
  auto client = dir.write("bin/docker", "#!/bin/sh\nexit 0\n");
  ::chmod(client.c_str(), 0755);
  Policy policy;
  policy.engine = "docker";
  policy.engine_search_path = (dir.path() / "bin").string();
  policy.endpoints = {entry("unix:///run/a.sock"), entry("unix:///run/b.sock")};
  return policy;
}

EnginePing answers_but(const std::string& dead) {
  return [dead](const Engine& engine) -> std::optional<std::string> {
    return engine.endpoint == dead ? std::optional<std::string>("Connection refused")
                                   : std::nullopt;
  };
}

}  // namespace

TEST_CASE("engine.endpoints takes a list, checks each entry and is trusted", "[engine-pool]") {
  Policy policy;
  CHECK(apply_error(policy, "engine.endpoints",
                    "unix:///var/run/docker.sock, tcp://10.0.0.2:2376 ssh://me@host")
            .empty());
  CHECK(policy.endpoints == std::vector<PoolEngine>{entry("unix:///var/run/docker.sock"),
                                                    entry("tcp://10.0.0.2:2376"),
                                                    entry("ssh://me@host")});
  CHECK(render_value(policy, "engine.endpoints") ==
        "unix:///var/run/docker.sock, tcp://10.0.0.2:2376, ssh://me@host");
  CHECK_THAT(apply_error(policy, "engine.endpoints", "unix:///a.sock, http://x"),
             Catch::Contains("layer.conf:3") && Catch::Contains("\"http://x\": expected"));
  CHECK(apply_error(policy, "engine.max_runs", "4").empty());
  CHECK(policy.engine_max_runs == 4);
  CHECK_THAT(apply_error(policy, "engine.max_runs", "-1"), Catch::Contains("whole number"));
  CHECK(apply_error(policy, "engine.place_wait", "5s").empty());
  CHECK(policy.engine_place_wait_ms == 5000);
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"engine.endpoints", "unix:///a.sock"},
                                                        {"engine.max_runs", "1"},
                                                        {"engine.place_wait", "1s"}}) {
    CAPTURE(key);
    CHECK_THAT(apply_error(policy, key, value, Trust::tighten_only),
               Catch::Contains("workspace file"));
  }
}

TEST_CASE("placement: never a down engine, a full one or one without the pin", "[engine-pool]") {
  std::vector<Candidate> engines = {{"a", 3, false, 3}, {"b", 1, false, 3}, {"c", 2, false, 3}};
  CHECK(placement_order(engines) == std::vector<size_t>{1, 2});
  engines[1].down = true;
  CHECK(placement_order(engines) == std::vector<size_t>{2});
  engines[2].cap = 2;  // all at cap: nothing to choose, the run waits
  CHECK(placement_order(engines).empty());
  CHECK_FALSE(sandshim::engine::all_down(engines));
  engines[0].down = engines[2].down = true;
  CHECK(sandshim::engine::all_down(engines));
}

TEST_CASE("placement: the smallest share of its cap first, equal shares in list order",
          "[engine-pool]") {
  // Caps of 1 and 4: one run on the 4 (1/4) comes after none on the 1, before one on the 1.
  std::vector<Candidate> engines = {{"one", 0, false, 1}, {"four", 1, false, 4}};
  CHECK(placement_order(engines) == std::vector<size_t>{0, 1});
  engines[1].load = 0;
  CHECK(placement_order(engines) == std::vector<size_t>{0, 1});  // equal: list order
  engines = {{"four", 2, false, 4}, {"one", 0, false, 1}};
  CHECK(placement_order(engines) == std::vector<size_t>{1, 0});  // 0/1 before 2/4
  engines = {{"four", 3, false, 4}, {"two", 1, false, 2}, {"eight", 2, false, 8}};
  CHECK(placement_order(engines) == std::vector<size_t>{2, 1, 0});  // 1/4, 1/2, 3/4
  // Where counting runs would choose the small engine (1 run against 2), its share is the larger.
  engines = {{"small", 1, false, 2}, {"big", 2, false, 8}};
  CHECK(placement_order(engines) == std::vector<size_t>{1, 0});
  engines[0].load = 2;
  CHECK(placement_order(engines) == std::vector<size_t>{1});
}

TEST_CASE("placement: without a cap an engine counts against the largest cap listed, else by load",
          "[engine-pool]") {
  std::vector<Candidate> engines = {{"a", 3, false, 0}, {"b", 1, false, 0}, {"c", 1, false, 0}};
  CHECK(placement_order(engines) == std::vector<size_t>{1, 2, 0});  // no cap anywhere: load
  engines = {{"uncapped", 1, false, 0}, {"one", 0, false, 1}};
  CHECK(placement_order(engines) == std::vector<size_t>{1, 0});  // 1/1 against 0/1
  engines = {{"uncapped", 2, false, 0}, {"four", 1, false, 4}, {"one", 1, false, 1}};
  CHECK(placement_order(engines) == std::vector<size_t>{1, 0});  // 2 of "4" after 1 of 4
  engines[1].load = 4;  // the largest cap counts when its engine is full (or down) too
  CHECK(placement_order(engines) == std::vector<size_t>{0});
  engines[1].down = true;
  engines[0].load = 1000;  // far past any cap: still a choice, the last one
  engines[2].load = 0;
  CHECK(placement_order(engines) == std::vector<size_t>{2, 0});
}

TEST_CASE("placement: only the engines that carry the pin", "[engine-pool]") {
  std::vector<Candidate> engines = {
      {"a", 0, false, 16, true}, {"b", 1, false, 4}, {"c", 0, false, 1, true}, {"d", 2, false, 0}};
  // d counts against b's cap of 4 (2/4 after 1/4), not the pinned-out a's 16.
  CHECK(placement_order(engines) == std::vector<size_t>{1, 3});
  engines[1].down = engines[3].down = true;
  CHECK(placement_order(engines).empty());
  CHECK(sandshim::engine::all_down(engines));  // the pinned-out a and c do not count as up
  engines[0].pinned_out = false;
  CHECK(placement_order(engines) == std::vector<size_t>{0});
  CHECK_FALSE(sandshim::engine::all_down(engines));
}

TEST_CASE("slot files: a held slot counts, the cap bounds them, closing frees one",
          "[engine-pool]") {
  ScratchDir dir;
  EngineSlots slots(dir.path(), "tcp://10.0.0.2:2376");
  CHECK(slots.load() == 0);
  auto first = slots.take(2);
  auto second = slots.take(2);
  REQUIRE((first.valid() && second.valid()));
  CHECK(slots.load() == 2);
  CHECK_FALSE(slots.take(2).valid());
  CHECK(slots.take(0).valid());  // no cap
  first.reset();
  CHECK(slots.load() == 1);
  CHECK(slots.take(2).valid());
  CHECK(EngineSlots(dir.path(), "tcp://10.0.0.3:2376").load() == 0);
}

TEST_CASE("down file: an engine that failed a ping is skipped for the retry interval",
          "[engine-pool]") {
  ScratchDir dir;
  EngineSlots slots(dir.path(), "unix:///run/a.sock");
  CHECK_FALSE(slots.down(10'000));
  slots.mark_down();
  CHECK(slots.down(10'000));
  CHECK_FALSE(slots.down(0));
  slots.mark_up();
  CHECK_FALSE(slots.down(10'000));
}

TEST_CASE("place_engine: the least loaded engine that answers, its slot held", "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  auto root = dir.path() / "engines";
  auto busy = EngineSlots(root, "unix:///run/a.sock").take(0);
  Engine placed = place_engine(policy, answers_but(""), root);
  CHECK(placed.endpoint == "unix:///run/b.sock");
  CHECK(placed.describe() == "docker@unix:///run/b.sock");
  REQUIRE(placed.slot);
  CHECK(EngineSlots(root, "unix:///run/b.sock").load() == 1);
  placed = Engine{};
  CHECK(EngineSlots(root, "unix:///run/b.sock").load() == 0);
}

TEST_CASE("place_engine: an engine that does not answer is marked down and skipped",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  auto root = dir.path() / "engines";
  auto busy = EngineSlots(root, "unix:///run/b.sock").take(0);  // a is tried first
  for (int i = 0; i < 4; ++i) {
    CHECK(place_engine(policy, answers_but("unix:///run/a.sock"), root).endpoint ==
          "unix:///run/b.sock");
  }
  CHECK(EngineSlots(root, "unix:///run/a.sock").down(k_engine_retry_ms));
  CHECK(EngineSlots(root, "unix:///run/a.sock").load() == 0);
  CHECK_THROWS_WITH(place_engine(policy, answers_but("unix:///run/b.sock"), root),
                    Catch::StartsWith("no engine of engine.endpoints answers") &&
                        Catch::Contains("unix:///run/b.sock: Connection refused"));
}

TEST_CASE("place_engine: with every engine at engine.max_runs a run waits, then is refused",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  policy.engine_max_runs = 1;
  policy.engine_place_wait_ms = 200;
  auto root = dir.path() / "engines";
  Engine one = place_engine(policy, answers_but(""), root);
  Engine two = place_engine(policy, answers_but(""), root);
  CHECK(one.endpoint != two.endpoint);
  CHECK_THROWS_WITH(place_engine(policy, answers_but(""), root),
                    "every engine of engine.endpoints that answers runs its max_runs from this "
                    "machine (unix:///run/a.sock 1 of 1; unix:///run/b.sock 1 of 1), still "
                    "after 200ms (engine.place_wait)");
  std::string freed = two.endpoint;
  two = Engine{};
  CHECK(place_engine(policy, answers_but(""), root).endpoint == freed);
}

TEST_CASE("place_engine without engine.endpoints is engine.endpoint's one engine",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  policy.endpoints.clear();
  policy.endpoint = "unix:///run/c.sock";
  Engine engine = place_engine(policy, answers_but("unix:///run/c.sock"), dir.path());
  CHECK(engine.endpoint == "unix:///run/c.sock");
  CHECK_FALSE(engine.slot);
}

TEST_CASE("survey_engines: each engine's load and answer, read-only; the doctor line and verdict",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  policy.engine_max_runs = 4;
  auto root = dir.path() / "engines";
  auto busy = EngineSlots(root, "unix:///run/a.sock").take(0);
  auto engines = survey_engines(policy, answers_but("unix:///run/b.sock"), root);
  REQUIRE(engines.size() == 2);
  CHECK(engines[0].load == 1);
  CHECK(engines[0].failure.empty());
  CHECK(engines[1].failure == "Connection refused");
  CHECK_FALSE(EngineSlots(root, "unix:///run/b.sock").down(k_engine_retry_ms));  // not marked
  CHECK(engines_line(engines, 4) ==
        "1 of 2 answer (engine.max_runs = 4): docker@unix:///run/a.sock 1 in flight; "
        "docker@unix:///run/b.sock does not answer: Connection refused");
  CHECK(answering(engines) == 1);
  using sandshim::install::engines_finding;
  using sandshim::install::Status;
  auto some = engines_finding(1, 2, "through the broker: " + engines_line(engines, 4));
  CHECK(some.status == Status::warn);
  CHECK_THAT(some.detail, Catch::StartsWith("through the broker: 1 of 2 answer"));
  CHECK_THAT(some.fix, Catch::Contains("engine.endpoints"));
  CHECK(engines_finding(2, 2, "").status == Status::ok);
  CHECK(engines_finding(0, 2, "").status == Status::fail);
  engines[0].failure = "Connection refused";
  CHECK(answering(engines) == 0);
  CHECK_THAT(engines_line(engines, 0), Catch::StartsWith("0 of 2 answer (no engine.max_runs)"));
}

TEST_CASE("place_engine: a run pinned by engine.require_labels goes only to engines carrying them",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  policy.endpoints[0].labels = {"big"};
  policy.endpoints.push_back(entry("unix:///run/c.sock", std::nullopt, {"big", "gpu"}));
  auto root = dir.path() / "engines";
  policy.require_labels = {"gpu"};
  for (int i = 0; i < 3; ++i) {
    CHECK(place_engine(policy, answers_but(""), root).endpoint == "unix:///run/c.sock");
  }
  policy.require_labels = {"big"};
  Engine held = place_engine(policy, answers_but(""), root);
  CHECK(held.endpoint != "unix:///run/b.sock");
  Engine other = place_engine(policy, answers_but(""), root);  // the less loaded of a and c
  CHECK((other.endpoint != held.endpoint && other.endpoint != "unix:///run/b.sock"));
  policy.require_labels = {"arm"};
  CHECK_THROWS_WITH(place_engine(policy, answers_but(""), root),
                    "no engine of engine.endpoints labelled arm (engine.require_labels) is listed; "
                    "give one label=arm in its entry of engine.endpoints, or change "
                    "engine.require_labels");
  policy.require_labels = {"gpu"};
  CHECK_THROWS_WITH(place_engine(policy, answers_but("unix:///run/c.sock"), root),
                    Catch::StartsWith("no engine of engine.endpoints labelled gpu "
                                      "(engine.require_labels) answers (unix:///run/c.sock: "));
  policy.endpoints.clear();
  CHECK_THROWS_WITH(place_engine(policy, answers_but(""), root),
                    "engine.require_labels = gpu needs engine.endpoints, where engines carry "
                    "labels (label=NAME)");
}

TEST_CASE("place_engine: each engine's own max_runs, then engine.max_runs; full ones are named",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  policy.endpoints[0].max_runs = 1;
  policy.endpoints[1].labels = {"big"};
  policy.engine_max_runs = 2;  // b's cap
  policy.engine_place_wait_ms = 100;
  auto root = dir.path() / "engines";
  std::vector<Engine> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(place_engine(policy, answers_but(""), root));
  }
  CHECK(EngineSlots(root, "unix:///run/a.sock").load() == 1);
  CHECK(EngineSlots(root, "unix:///run/b.sock").load() == 2);
  CHECK_THROWS_WITH(place_engine(policy, answers_but(""), root),
                    "every engine of engine.endpoints that answers runs its max_runs from this "
                    "machine (unix:///run/a.sock 1 of 1; unix:///run/b.sock 2 of 2), still "
                    "after 100ms (engine.place_wait)");
  policy.require_labels = {"big"};
  CHECK_THROWS_WITH(place_engine(policy, answers_but(""), root),
                    "every engine of engine.endpoints labelled big (engine.require_labels) that "
                    "answers runs its max_runs from this machine (unix:///run/b.sock 2 of 2), "
                    "still after 100ms (engine.place_wait)");
  held.erase(std::remove_if(held.begin(), held.end(),
                            [](const Engine& e) { return e.endpoint == "unix:///run/a.sock"; }),
             held.end());
  policy.require_labels.clear();
  CHECK(place_engine(policy, answers_but(""), root).endpoint == "unix:///run/a.sock");
}

TEST_CASE("place_engine: a tcp:// engine uses its own certificates, else engine.tls_cert_path",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  policy.tls_cert_path = "/etc/certs/shared";
  policy.endpoints = {entry("tcp://10.0.0.2:2376"), entry("tcp://10.0.0.3:2376")};
  policy.endpoints[1].tls_cert_path = "/etc/certs/three";
  auto root = dir.path() / "engines";
  for (const auto& [pin, certs] : std::vector<std::pair<std::string, std::string>>{
           {"two", "/etc/certs/shared"}, {"three", "/etc/certs/three"}}) {
    policy.endpoints[0].labels = {"two"};
    policy.endpoints[1].labels = {"three"};
    policy.require_labels = {pin};
    Engine engine = place_engine(policy, answers_but(""), root);
    CHECK(engine.tls_cert_path == certs);
  }
  auto engines = survey_engines(policy, answers_but(""), root);
  CHECK(engines_line(engines, 0) ==
        "2 of 2 answer (no engine.max_runs): docker@tcp://10.0.0.2:2376 (label=two) 0 in flight; "
        "docker@tcp://10.0.0.3:2376 (tls_cert_path=/etc/certs/three label=three) 0 in flight");
}

TEST_CASE("place_engine: an entry's engine= picks its client and dialect, else engine.name's",
          "[engine-pool]") {
  ScratchDir dir;
  Policy policy = two_engines(dir);
  auto podman = dir.write("bin/podman", "#!/bin/sh\nexit 0\n");
  ::chmod(podman.c_str(), 0755);
  policy.endpoints[1].engine = "podman";
  policy.endpoints[1].labels = {"p"};
  policy.require_labels = {"p"};
  auto root = dir.path() / "engines";
  Engine pinned = place_engine(policy, answers_but(""), root);
  CHECK(pinned.describe() == "podman@unix:///run/b.sock");
  CHECK(pinned.client == podman);
  CHECK(pinned.dialect.is_podman());
  CHECK(std::count(pinned.env.begin(), pinned.env.end(), "CONTAINER_HOST=unix:///run/b.sock") == 1);
  policy.require_labels.clear();
  Engine other = place_engine(policy, answers_but(""), root);  // a: b has a run in flight
  CHECK(other.describe() == "docker@unix:///run/a.sock");
  CHECK_FALSE(other.dialect.is_podman());
  CHECK(survey_engines(policy, answers_but(""), root)[1].kind == "podman");
  CHECK(engines_line(survey_engines(policy, answers_but(""), root), 0) ==
        "2 of 2 answer (no engine.max_runs): docker@unix:///run/a.sock 1 in flight; "
        "podman@unix:///run/b.sock (label=p) 1 in flight");
  // engine.path is docker's client: the podman entry finds its own on engine.search_path.
  policy.engine_path = (dir.path() / "bin" / "docker").string();
  policy.require_labels = {"p"};
  CHECK(place_engine(policy, answers_but(""), root).client == podman);
  policy.endpoints[1].endpoint = "tcp://10.0.0.2:2376";
  policy.endpoints[1].tls_cert_path = "/etc/certs/b";
  CHECK_THROWS_WITH(place_engine(policy, answers_but(""), root),
                    Catch::Contains("podman's client has no TLS for tcp://"));
}
