#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "shim/policy.hpp"
#include "test_shim_support.hpp"

using sandshim::Fatal;
using namespace sandshim::shim;
using sandshim::test::ScopedEnv;
using sandshim::test::ScratchDir;

namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Fatal& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("defaults are the hardened policy", "[policy]") {
  Policy policy;
  CHECK(policy.network == "none");
  CHECK(policy.workspace_mode == "ro");
  CHECK(policy.memory_bytes == 512ULL << 20);
  CHECK(policy.pids == 64);
  CHECK(policy.timeout_ms == 30000);
  CHECK(policy.tmp_bytes == 64ULL << 20);
  CHECK(policy.audit_required);
}

TEST_CASE("config files are read with line numbers", "[policy]") {
  ScratchDir dir;
  auto file = dir.write("config",
                        "# comment\n[sandbox]\nmemory = 256m\n\ntimeout = 5s\n[images]\n"
                        "python = python:3.12-alpine\n");
  auto settings = read_config_file(file);
  REQUIRE(settings.size() == 3);
  CHECK(settings[0].key == "sandbox.memory");
  CHECK(settings[0].origin.line == 3);
  CHECK(settings[1].origin.line == 5);
  CHECK(settings[2].key == "images.python");
  Policy policy;
  apply_settings(policy, settings, Trust::full);
  CHECK(policy.memory_bytes == 256ULL << 20);
  CHECK(policy.timeout_ms == 5000);
  CHECK(policy.images.at("python") == "python:3.12-alpine");
  CHECK(policy.origins.at("sandbox.memory").describe() == file.string() + ":3");
}

TEST_CASE("every bad key is reported at once with file and line", "[policy]") {
  ScratchDir dir;
  auto file = dir.write("config", "[sandbox]\nmemory = lots\nfrobnicate = 1\ncpus = -2\n");
  Policy policy;
  auto message = error_of([&] { apply_settings(policy, read_config_file(file), Trust::full); });
  CHECK_THAT(message,
             Catch::Contains(file.string() + ":2: sandbox.memory = \"lots\": expected a size"));
  CHECK_THAT(message,
             Catch::Contains(file.string() + ":3: sandbox.frobnicate = \"1\": unknown key"));
  CHECK_THAT(message, Catch::Contains(file.string() + ":4: sandbox.cpus"));
}

TEST_CASE("a malformed or unreadable file is a clear error", "[policy]") {
  ScratchDir dir;
  auto bad = dir.write("config", "[sandbox\nmemory\n");
  CHECK_THAT(error_of([&] { read_config_file(bad); }), Catch::Contains(bad.string()));
  CHECK_THAT(error_of([&] { read_config_file(dir.path() / "missing"); }),
             Catch::Contains("cannot read config file"));
}

TEST_CASE("a workspace file may only tighten", "[policy]") {
  Policy policy;
  auto apply = [&](const std::string& key, const std::string& value) {
    return error_of([&] {
      apply_settings(policy, {{key, value, {".sandshim.conf", 1}}}, Trust::tighten_only);
    });
  };
  CHECK(apply("sandbox.memory", "128m").empty());
  CHECK(policy.memory_bytes == 128ULL << 20);
  CHECK_THAT(apply("sandbox.memory", "4g"), Catch::Contains("would loosen"));
  CHECK(policy.memory_bytes == 128ULL << 20);
  CHECK_THAT(apply("sandbox.network", "bridge"),
             Catch::Contains(".sandshim.conf:1: sandbox.network"));
  CHECK(apply("sandbox.network", "none").empty());
  CHECK_THAT(apply("sandbox.workspace", "rw"), Catch::Contains("would loosen"));
  CHECK_THAT(apply("sandbox.timeout", "1h"), Catch::Contains("would loosen"));
  CHECK(apply("sandbox.timeout", "2s").empty());
  CHECK_THAT(apply("images.python", "evil:latest"), Catch::Contains("another image"));
  CHECK_THAT(apply("env.allow", "AWS_*"), Catch::Contains("new names"));
  CHECK(apply("env.deny", "MY_VAR").empty());
  CHECK(apply("sandbox.hide", "secrets/ *.p12").empty());
  CHECK(policy.hide == std::vector<std::string>{"secrets/", "*.p12"});
  CHECK_THAT(apply("sandbox.unhide", ".env"), Catch::Contains("show hidden files"));
  CHECK_THAT(apply("sandbox.hide", "/etc"), Catch::Contains("relative to the workspace"));
  CHECK_THAT(apply("sandbox.hide_limit", "1000000"), Catch::Contains("would loosen"));
  CHECK(apply("sandbox.hide_limit", "1000").empty());
  CHECK_THAT(apply("audit.required", "false"), Catch::Contains("would loosen"));
  CHECK_THAT(apply("engine.endpoint", "ssh://elsewhere"), Catch::Contains("workspace file"));
  CHECK(apply("hook.mode", "path").empty());
  CHECK(apply("hook.mode", "deny").empty());
  CHECK_THAT(apply("hook.mode", "path"), Catch::Contains("would loosen"));
}

TEST_CASE("env.allow can never let the engine's or the loader's variables in", "[policy]") {
  Policy policy;
  auto message = error_of([&] {
    apply_settings(policy, {{"env.allow", "*", {"config", 1}}}, Trust::full);
  });
  CHECK_THAT(message, Catch::Contains("never enters a sandbox"));
}

TEST_CASE("layers apply in order: files, $SANDSHIM_CONFIG, workspace, command line", "[policy]") {
  ScratchDir dir;
  ScopedEnv config_home("XDG_CONFIG_HOME", (dir.path() / "xdg").string());
  dir.write("xdg/sandshim/config", "[sandbox]\nmemory = 1g\ntimeout = 60s\npids = 100\n");
  auto explicit_file = dir.write("explicit.conf", "[sandbox]\nmemory = 768m\n");
  ScopedEnv explicit_config("SANDSHIM_CONFIG", explicit_file.string());
  dir.write("ws/.sandshim.conf", "[sandbox]\ntimeout = 10s\n");
  Policy policy = load_policy({dir.path() / "ws", {{"sandbox.pids", "32", {"command line", 0}}}});
  CHECK(policy.memory_bytes == 768ULL << 20);
  CHECK(policy.timeout_ms == 10000);
  CHECK(policy.pids == 32);
  CHECK(policy.sources.size() == 3);
  CHECK(policy.origins.at("sandbox.pids").describe() == "command line");
}

TEST_CASE("$SANDSHIM_CONFIG must name a readable file", "[policy]") {
  ScratchDir dir;
  ScopedEnv config_home("XDG_CONFIG_HOME", (dir.path() / "xdg").string());
  ScopedEnv explicit_config("SANDSHIM_CONFIG", (dir.path() / "nope.conf").string());
  CHECK_THAT(error_of([] { load_policy({}); }), Catch::Contains("nope.conf"));
}

TEST_CASE("the digest changes with any effective value", "[policy]") {
  Policy a;
  Policy b;
  CHECK(a.digest() == b.digest());
  b.pids = 63;
  CHECK(a.digest() != b.digest());
  Policy c;
  c.images["ruby"] = "ruby:3";
  CHECK(a.digest() != c.digest());
}

TEST_CASE("every key is documented in the README", "[policy][docs]") {
  std::ifstream readme(std::string(SANDSHIM_TEST_DATA_DIR) + "/../../README.md");
  std::string text((std::istreambuf_iterator<char>(readme)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(text.empty());
  for (const auto& key : policy_keys()) {
    INFO(key.name);
    CHECK(text.find("`" + key.name + "`") != std::string::npos);
  }
}
