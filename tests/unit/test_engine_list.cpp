// engine.endpoints' entries with their own settings (policy/engine_list.cpp): the syntax, its
// strict errors, repeated lines of one file, and engine.require_labels.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "policy/engine_list.hpp"
#include "policy/policy.hpp"

using namespace sandshim::shim;

namespace {

// The engines `text` names; fails the test with the error when it names none.
std::vector<PoolEngine> engines_of(const std::string& text) {
  auto parsed = parse_pool_engines(text);
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    FAIL(*error);
  }
  return std::get<std::vector<PoolEngine>>(parsed);
}

std::string error_of(const std::string& text) {
  auto parsed = parse_pool_engines(text);
  const auto* error = std::get_if<std::string>(&parsed);
  return error ? *error : "";
}

std::string apply_error(Policy& policy, const std::vector<Setting>& settings) {
  try {
    apply_settings(policy, settings, Trust::full);
  } catch (const sandshim::Fatal& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("engine.endpoints: each entry carries its own certificates, cap and labels",
          "[engine-pool][engine-list]") {
  auto engines = engines_of(
      "unix:///var/run/docker.sock max_runs=4, tcp://10.0.0.2:2376 tls_cert_path=/etc/t/b "
      "max_runs=0 label=gpu label=big, ssh://me@host");
  REQUIRE(engines.size() == 3);
  CHECK(engines[0] == PoolEngine{"unix:///var/run/docker.sock", "", 4, {}});
  CHECK(engines[1] == PoolEngine{"tcp://10.0.0.2:2376", "/etc/t/b", 0, {"gpu", "big"}});
  CHECK(engines[2] == PoolEngine{"ssh://me@host", "", std::nullopt, {}});
  CHECK(render_pool_engine(engines[1]) ==
        "tcp://10.0.0.2:2376 tls_cert_path=/etc/t/b max_runs=0 label=gpu label=big");
  CHECK(render_pool_options(engines[2]).empty());
  auto mixed = engines_of(
      "unix:///var/run/docker.sock engine=docker, unix:///run/podman/podman.sock engine=podman "
      "label=p");
  CHECK(mixed[1] ==
        PoolEngine{"unix:///run/podman/podman.sock", "", std::nullopt, {"p"}, "podman"});
  CHECK(render_pool_engine(mixed[1]) == "unix:///run/podman/podman.sock engine=podman label=p");
  CHECK(mixed[0].engine == "docker");
  CHECK(engines[0].engine.empty());  // engine.name's
  // The list without options reads as before: spaces separate endpoints too.
  CHECK(engines_of("unix:///a.sock tcp://h:1 max_runs=2,, ").size() == 2);
  CHECK(engines_of("unix:///a.sock tcp://h:1 max_runs=2")[1].max_runs == 2);
  CHECK(engines_of("").empty());
}

TEST_CASE("engine.endpoints: an ssh:// entry carries its own key and known_hosts",
          "[engine-pool][engine-list]") {
  auto engines = engines_of(
      "ssh://me@h:2222 ssh_identity=/k/id ssh_known_hosts=/k/known_hosts label=far, tcp://h:1");
  REQUIRE(engines.size() == 2);
  CHECK(engines[0].ssh_identity == "/k/id");
  CHECK(engines[0].ssh_known_hosts == "/k/known_hosts");
  CHECK(render_pool_engine(engines[0]) ==
        "ssh://me@h:2222 ssh_identity=/k/id ssh_known_hosts=/k/known_hosts label=far");
  CHECK(error_of("tcp://h:1 ssh_identity=/k/id") ==
        "\"ssh_identity=/k/id\": only an ssh:// engine takes ssh files");
  CHECK(error_of("ssh://h ssh_known_hosts=kh") ==
        "\"ssh_known_hosts=kh\": expected an absolute path");
  CHECK(error_of("ssh://h ssh_identity=/a ssh_identity=/b") ==
        "\"ssh_identity=/b\": given twice for one engine");
}

TEST_CASE("engine.endpoints: a bad entry is one error quoting its word",
          "[engine-pool][engine-list]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tcp://h:1 colour=red", "\"colour=red\": unknown option of an engine"},
      {"max_runs=2 tcp://h:1", "\"max_runs=2\": an option follows its engine's endpoint"},
      {"unix:///a.sock, max_runs=2", "\"max_runs=2\": an option follows"},
      {"tcp://h:1 max_runs=1 max_runs=2", "\"max_runs=2\": given twice for one engine"},
      {"tcp://h:1 max_runs=4097", "\"max_runs=4097\": expected a whole number from 0 to 4096"},
      {"tcp://h:1 max_runs=-1", "expected a whole number"},
      {"tcp://h:1 max_runs=", "expected a whole number"},
      {"unix:///a.sock tls_cert_path=/t", "only a tcp:// engine takes TLS certificates"},
      {"tcp://h:1 tls_cert_path=certs", "\"tls_cert_path=certs\": expected an absolute path"},
      {"tcp://h:1 label=GPU", "\"label=GPU\": expected a label of lowercase letters"},
      {"tcp://h:1 label=", "expected a label"},
      {"tcp://h:1 label=-x", "expected a label"},
      {"tcp://h:1 label=gpu label=gpu", "given twice for one engine"},
      {"tcp://h:1 labels=gpu",
       "unknown option of an engine (engine=, tls_cert_path=, ssh_identity=, ssh_known_hosts=, "
       "max_runs=, label=)"},
      {"unix:///p.sock engine=lxc", "\"engine=lxc\": expected docker or podman"},
      {"unix:///p.sock engine=", "expected docker or podman"},
      {"unix:///p.sock engine=auto", "expected docker or podman"},
      {"unix:///p.sock engine=podman engine=docker", "\"engine=docker\": given twice"},
      {"tcp://h:1 label=gpu,big", "\"big\": expected unix:///path"},
      {"tcp://h:1, tcp://h:1", "\"tcp://h:1\": listed twice"},
      {"http://x", "\"http://x\": expected unix:///path"},
  };
  for (const auto& [text, error] : cases) {
    CAPTURE(text);
    CHECK_THAT(error_of(text), Catch::StartsWith(error) || Catch::Contains(error));
  }
}

TEST_CASE("engine.endpoints: repeated lines of one file are one list, a later layer replaces it",
          "[engine-pool][engine-list]") {
  Policy policy;
  CHECK(apply_error(policy, parse_config_text("[engine]\n"
                                              "endpoints = unix:///a.sock max_runs=2\n"
                                              "max_runs = 3\n"
                                              "endpoints = tcp://h:1 label=big\n",
                                              "system.conf"))
            .empty());
  REQUIRE(policy.endpoints.size() == 2);
  CHECK(policy.endpoints[1] == PoolEngine{"tcp://h:1", "", std::nullopt, {"big"}});
  CHECK(render_value(policy, "engine.endpoints") ==
        "unix:///a.sock max_runs=2, tcp://h:1 label=big");
  CHECK(apply_error(policy, parse_config_text("[engine]\nendpoints = unix:///c.sock\n", "user"))
            .empty());
  CHECK(policy.endpoints == std::vector<PoolEngine>{{"unix:///c.sock", "", std::nullopt, {}}});
  CHECK_THAT(apply_error(policy, parse_config_text("[engine]\nendpoints = unix:///a.sock\n"
                                                   "endpoints = tcp://h:1 max_runs=x\n",
                                                   "bad.conf")),
             Catch::Contains("bad.conf:2: engine.endpoints = ") &&
                 Catch::Contains("\"max_runs=x\": expected a whole number from 0 to 4096"));
  CHECK_THAT(apply_error(policy, parse_config_text("[engine]\nendpoints = unix:///a.sock\n"
                                                   "endpoints = unix:///p.sock engine=lxc\n",
                                                   "kind.conf")),
             Catch::Contains("kind.conf:2: engine.endpoints = ") &&
                 Catch::Contains("\"engine=lxc\": expected docker or podman"));
  CHECK(policy.endpoints.size() == 1);  // a bad layer changes nothing
}

TEST_CASE("engine.require_labels: labels to pin a run by, trusted", "[engine-pool][engine-list]") {
  Policy policy;
  CHECK(apply_error(policy, {{"engine.require_labels", "gpu, big gpu", {"c", 1}}}).empty());
  CHECK(policy.require_labels == std::vector<std::string>{"gpu", "big"});
  CHECK(render_value(policy, "engine.require_labels") == "gpu big");
  CHECK_THAT(apply_error(policy, {{"engine.require_labels", "GPU", {"c", 1}}}),
             Catch::Contains("\"GPU\": expected a label"));
  try {
    apply_settings(policy, {{"engine.require_labels", "gpu", {"ws", 1}}}, Trust::tighten_only);
    FAIL("a workspace file set engine.require_labels");
  } catch (const sandshim::Fatal& e) {
    CHECK_THAT(e.what(), Catch::Contains("workspace file"));
  }
  PoolEngine engine{"tcp://h:1", "", std::nullopt, {"gpu", "big"}};
  CHECK(carries_labels(engine, {}));
  CHECK(carries_labels(engine, {"big", "gpu"}));
  CHECK_FALSE(carries_labels(engine, {"gpu", "arm"}));
}
