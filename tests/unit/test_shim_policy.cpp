#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>

#include "common/error.hpp"
#include "policy/policy.hpp"
#include "skip.hpp"
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
  CHECK(policy.network == Network::none);
  CHECK(policy.workspace_mode == WorkspaceMode::wrap);
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
  CHECK_THAT(apply("images.python", "evil:latest"), Catch::Contains("workspace file"));
  CHECK_THAT(apply("env.allow", "AWS_*"), Catch::Contains("workspace file"));
  CHECK(apply("env.deny", "MY_VAR").empty());
  CHECK(apply("sandbox.hide", "secrets/ *.p12").empty());
  CHECK(policy.hide == std::vector<std::string>{"secrets/", "*.p12"});
  CHECK_THAT(apply("sandbox.unhide", ".env"), Catch::Contains("workspace file"));
  CHECK_THAT(apply("sandbox.writable", "node_modules"), Catch::Contains("workspace file"));
  CHECK_THAT(apply("sandbox.cache", "on"), Catch::Contains("would loosen"));
  CHECK(apply("sandbox.cache", "off").empty());
  CHECK(apply("sandbox.runtime", "runsc").empty());
  CHECK_THAT(apply("sandbox.runtime", "runc"), Catch::Contains("would loosen"));
  CHECK_THAT(apply("sandbox.hide", "/etc"), Catch::Contains("relative to the workspace"));
  CHECK_THAT(apply("sandbox.hide_limit", "1000000"), Catch::Contains("would loosen"));
  CHECK(apply("sandbox.hide_limit", "1000").empty());
  CHECK_THAT(apply("audit.required", "false"), Catch::Contains("would loosen"));
  CHECK(apply("audit.required", "true").empty());
  CHECK_THAT(apply("audit.tail_bytes", "1k"), Catch::Contains("workspace file"));
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
  PolicyInputs inputs(dir.path() / "ws", {{"sandbox.pids", "32", {"command line", 0}}});
  inputs.system_file = dir.path() / "none";
  Policy policy = load_policy(inputs);
  CHECK(policy.memory_bytes == 768ULL << 20);
  CHECK(policy.timeout_ms == 10000);
  CHECK(policy.pids == 32);
  CHECK(policy.sources.size() == 3);
  CHECK(policy.origins.at("sandbox.pids").describe() == "command line");
}

TEST_CASE("workspace files compose up to the outermost git repository", "[policy]") {
  ScratchDir dir;
  ScopedEnv config_home("XDG_CONFIG_HOME", (dir.path() / "xdg").string());
  dir.write("outer/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("outer/.sandshim.conf", "[sandbox]\ntimeout = 5s\n");
  dir.write("outer/vendor/.sandshim.conf", "[sandbox]\npids = 20\n");
  dir.write("outer/vendor/inner/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("outer/vendor/inner/.sandshim.conf", "[sandbox]\nmemory = 256m\n");
  dir.write(".sandshim.conf", "[sandbox]\ncpus = 0.5\n");  // above every repository: not read
  PolicyInputs inputs(dir.path() / "outer/vendor/inner", {});
  inputs.system_file = dir.path() / "none";
  Policy policy = load_policy(inputs);
  CHECK(policy.timeout_ms == 5000);
  CHECK(policy.pids == 20);
  CHECK(policy.memory_bytes == 256ULL << 20);
  CHECK(policy.cpus == Policy{}.cpus);

  SECTION("a nested file cannot loosen what an outer one set") {
    dir.write("outer/vendor/inner/.sandshim.conf", "[sandbox]\ntimeout = 20s\n");  // < default
    CHECK_THROWS(load_policy(inputs));
  }
  SECTION("a workspace outside any repository reads its own file only") {
    dir.write("plain/.sandshim.conf", "[sandbox]\ntimeout = 7s\n");
    PolicyInputs plain(dir.path() / "plain", {});
    plain.system_file = dir.path() / "none";
    CHECK(load_policy(plain).timeout_ms == 7000);
  }
}

TEST_CASE("$SANDSHIM_CONFIG must name a readable file", "[policy]") {
  ScratchDir dir;
  ScopedEnv config_home("XDG_CONFIG_HOME", (dir.path() / "xdg").string());
  ScopedEnv explicit_config("SANDSHIM_CONFIG", (dir.path() / "nope.conf").string());
  PolicyInputs inputs;
  inputs.system_file = dir.path() / "none";
  CHECK_THAT(error_of([&] { load_policy(inputs); }), Catch::Contains("nope.conf"));
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

namespace {

// For each ordered key: a stricter starting value (empty: the default) and a value looser than
// it (empty: nothing is looser, as adding to env.deny). A key added to the table without an
// entry here fails the table-agreement test.
const std::map<std::string, std::pair<std::string, std::string>> k_looser_values = {
    {"sandbox.network", {"", "bridge"}},
    {"network.allow", {"", "x.example"}},
    {"sandbox.workspace", {"", "rw"}},
    {"sandbox.memory", {"", "4g"}},
    {"sandbox.cpus", {"", "8"}},
    {"sandbox.pids", {"", "4096"}},
    {"sandbox.timeout", {"", "1h"}},
    {"sandbox.tmp_size", {"", "1g"}},
    {"sandbox.shm_size", {"", "1g"}},
    {"sandbox.nofile", {"", "65536"}},
    {"sandbox.nproc", {"", "65536"}},
    {"limits.unenforced", {"", "accept"}},
    {"audit.required", {"", "false"}},
    {"pool.size", {"", "8"}},
    {"pool.idle_ttl", {"", "1h"}},
    {"pool.max", {"", "16"}},
    {"pool.shrink_after", {"", "1h"}},
    {"pool.claim_wait", {"", "1m"}},
    {"hook.mode", {"deny", "path"}},
    {"env.deny", {"", ""}},
    {"sandbox.hide", {"", ""}},
    {"sandbox.hide_limit", {"", "300000"}},
    {"sandbox.cache", {"", "on"}},
    {"sandbox.cache_size", {"", "8g"}},
    {"sandbox.runtime", {"runsc", "runc"}},
};

// A valid value for keys without an order (a no-op where possible).
std::string valid_value(const KeyInfo& key) {
  if (key.name == "images.COMMAND") {
    return "python:3.12";
  }
  if (key.name == "users.may_set") {
    return "sandbox.timeout<=10m";
  }
  if (key.name == "users.pin") {
    return "hook.mode";
  }
  return key.name == "env.allow" || key.name == "env.deny" ? "MY_VAR" : key.default_value;
}

std::string setting_name(const KeyInfo& key) {
  return key.name == "images.COMMAND" ? "images.python" : key.name;
}

std::string apply_layer_of(Layer layer, PolicyMode mode, const std::string& key,
                           const std::string& value, Policy policy = {}) {
  return error_of([&] {
    apply_settings(policy, {{key, value, {"layer.conf", 7}}}, LayerTrust{layer, mode});
  });
}

}  // namespace

TEST_CASE("the key table, the code and `policy keys` agree on every key's trust", "[policy]") {
  std::string listing = format_policy_keys();
  for (const auto& key : policy_keys()) {
    INFO(key.name);
    std::string name = setting_name(key);
    CHECK_THAT(listing, Catch::Contains(key.name + " (default: ") &&
                            Catch::Contains(describe_trust(key.trust)));
    bool ordered = key.trust == KeyTrust::tighten || key.trust == KeyTrust::tighten_pinned;
    CHECK(ordered == (k_looser_values.count(key.name) == 1));
    std::string same = ordered ? render_value(Policy{}, key.name) : valid_value(key);
    std::string workspace = apply_layer_of(Layer::workspace, PolicyMode::direct, name, same);
    CHECK(workspace.empty() == workspace_may_tighten(key.trust));
    CHECK(apply_layer_of(Layer::system, PolicyMode::broker, name, valid_value(key)).empty());
    std::string user = apply_layer_of(Layer::user, PolicyMode::broker, name, same);
    CHECK(user.empty() == ordered);
    auto [base, looser] =
        ordered ? k_looser_values.at(key.name) : std::pair<std::string, std::string>();
    if (!looser.empty()) {
      Policy start;
      if (!base.empty()) {
        apply_settings(start, {{name, base, {"system", 1}}}, LayerTrust{Layer::system});
      }
      CHECK_THAT(apply_layer_of(Layer::workspace, PolicyMode::direct, name, looser, start),
                 Catch::Contains("would loosen"));
      CHECK_THAT(apply_layer_of(Layer::user, PolicyMode::broker, name, looser, start),
                 Catch::Contains("layer.conf:7: " + name) && Catch::Contains("would loosen"));
      CHECK(apply_layer_of(Layer::user, PolicyMode::direct, name, looser, start).empty());
    }
  }
}

TEST_CASE("users.may_set opens only limits, and needs a ceiling", "[policy]") {
  auto system = [](const std::string& value) {
    return apply_layer_of(Layer::system, PolicyMode::broker, "users.may_set", value);
  };
  CHECK(system("sandbox.timeout<=10m, pool.size <= 4").empty());
  CHECK_THAT(system("hook.mode<=path"), Catch::Contains("can never be opened"));
  CHECK_THAT(system("audit.required<=false"), Catch::Contains("can never be opened"));
  CHECK_THAT(system("engine.path<=/x"), Catch::Contains("can never be opened"));
  CHECK_THAT(system("sandbox.timeout"), Catch::Contains("expected KEY<=CEILING"));
  CHECK_THAT(system("sandbox.timeout<=soon"), Catch::Contains("ceiling of sandbox.timeout"));
  CHECK_THAT(apply_layer_of(Layer::user, PolicyMode::direct, "users.may_set", "pool.size<=4"),
             Catch::Contains("only in the system file"));
}

namespace {

// A system file that passes the ownership check: root-owned in a root-owned 0700 directory.
struct BrokerFiles {
  ScratchDir dir;
  std::filesystem::path system;
  std::filesystem::path user;

  BrokerFiles(const std::string& system_text, const std::string& user_text)
      : system(dir.write("etc/config", system_text)), user(dir.write("home/config", user_text)) {
    std::filesystem::permissions(dir.path() / "etc", std::filesystem::perms::owner_all);
  }

  Policy load(PolicyMode mode = PolicyMode::broker, std::vector<Setting> flags = {}) const {
    PolicyInputs inputs({}, std::move(flags));
    inputs.mode = mode;
    inputs.system_file = system;
    inputs.user_files = std::vector<ConfigFile>{{user, false}};
    return load_policy(inputs);
  }
};

}  // namespace

TEST_CASE("broker mode: a user file may only tighten the system file", "[policy][floors]") {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("the system file must be root-owned: run the unit tests as root");
    return;
  }
  BrokerFiles files("[sandbox]\ntimeout = 20s\n[hook]\nmode = wrap\n",
                    "[sandbox]\ntimeout = 10s\nmemory = 256m\n");
  Policy tightened = files.load();
  CHECK(tightened.timeout_ms == 10000);
  CHECK(tightened.memory_bytes == 256ULL << 20);
  CHECK(tightened.hook_mode == HookMode::wrap);

  for (const auto& [line, key] : {std::pair{"[sandbox]\ntimeout = 1h\n", "sandbox.timeout"},
                                  {"[engine]\npath = /tmp/fake\n", "engine.path"},
                                  {"[hook]\nmode = path\n", "hook.mode"},
                                  {"[audit]\nrequired = false\n", "audit.required"},
                                  {"[audit]\ndb = /tmp/mine.db\n", "audit.db"},
                                  {"[images]\npython = evil:1\n", "images.python"}}) {
    INFO(key);
    BrokerFiles loosening("[hook]\nmode = wrap\n", line);
    std::string message = error_of([&] { loosening.load(); });
    CHECK_THAT(message, Catch::StartsWith("policy refused: " + loosening.user.string() +
                                          ":2: " + key + " = "));
    CHECK(message.find('\n') == std::string::npos);
    CHECK(error_of([&] { loosening.load(PolicyMode::direct); }).empty());
  }
  try {
    BrokerFiles{"", "[sandbox]\nnetwork = bridge\n"}.load();
    FAIL("a loosening user file was accepted");
  } catch (const PolicyError& error) {
    CHECK(error.code() == 125);
    REQUIRE(error.problems().size() == 1);
    CHECK(error.problems()[0].key == "sandbox.network");
    CHECK(error.problems()[0].loosens);
  }
  BrokerFiles flags("", "");
  CHECK_THAT(error_of([&] {
               flags.load(PolicyMode::broker, {{"sandbox.network", "bridge", {"command line", 0}}});
             }),
             Catch::Contains("command line: sandbox.network"));
}

TEST_CASE("sandbox.workspace = wrap opens the workspace to an agent's whole shell alone",
          "[policy]") {
  CHECK(workspace_for_run(WorkspaceMode::wrap, true) == WorkspaceMode::rw);
  CHECK(workspace_for_run(WorkspaceMode::wrap, false) == WorkspaceMode::ro);
  for (bool shell : {true, false}) {
    CHECK(workspace_for_run(WorkspaceMode::ro, shell) == WorkspaceMode::ro);
    CHECK(workspace_for_run(WorkspaceMode::rw, shell) == WorkspaceMode::rw);
  }
  // wrap lies between the two: a workspace file may take it to ro, never to rw.
  CHECK(apply_layer_of(Layer::workspace, PolicyMode::direct, "sandbox.workspace", "ro").empty());
  CHECK_THAT(apply_layer_of(Layer::workspace, PolicyMode::direct, "sandbox.workspace", "rw"),
             Catch::Contains("sandbox.workspace"));
}

TEST_CASE("through a broker the workspace is wrap's as in direct mode; a user file may close it",
          "[policy][floors]") {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("the system file must be root-owned: run the unit tests as root");
    return;
  }
  CHECK(BrokerFiles("", "").load(PolicyMode::direct).workspace_mode == WorkspaceMode::wrap);
  CHECK(BrokerFiles("", "").load().workspace_mode == WorkspaceMode::wrap);
  CHECK(BrokerFiles("", "[sandbox]\nworkspace = ro\n").load().workspace_mode == WorkspaceMode::ro);
  CHECK_THAT(error_of([] { BrokerFiles("", "[sandbox]\nworkspace = rw\n").load(); }),
             Catch::Contains("sandbox.workspace = \"rw\": would loosen"));
  CHECK(BrokerFiles("[sandbox]\nworkspace = ro\n", "").load().workspace_mode == WorkspaceMode::ro);
  CHECK_THAT(error_of([] {
               BrokerFiles("[sandbox]\nworkspace = ro\n", "[sandbox]\nworkspace = wrap\n").load();
             }),
             Catch::Contains("sandbox.workspace = \"wrap\": would loosen"));
}

TEST_CASE("broker mode: an opened key may loosen up to its ceiling, not beyond",
          "[policy][floors]") {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("the system file must be root-owned: run the unit tests as root");
    return;
  }
  std::string system = "[users]\nmay_set = sandbox.timeout<=10m, pool.size<=4\n";
  CHECK(BrokerFiles(system, "[sandbox]\ntimeout = 10m\n").load().timeout_ms == 600000);
  CHECK(BrokerFiles(system, "[pool]\nsize = 4\n").load().pool_size == 4);
  std::string beyond = error_of([&] { BrokerFiles(system, "[sandbox]\ntimeout = 11m\n").load(); });
  CHECK_THAT(beyond, Catch::Contains("sandbox.timeout = \"11m\": would loosen the system policy "
                                     "beyond its ceiling (30s -> 660s, users.may_set allows up to "
                                     "600s)"));
  CHECK_THAT(error_of([&] { BrokerFiles(system, "[sandbox]\nmemory = 1g\n").load(); }),
             Catch::Contains("sandbox.memory"));
}

TEST_CASE("direct mode: users.pin makes the system file a floor for pinned keys",
          "[policy][floors]") {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("the system file must be root-owned: run the unit tests as root");
    return;
  }
  std::string system = "[hook]\nmode = wrap\n[users]\npin = hook.mode, engine.*\n";
  CHECK_THAT(
      error_of([&] { BrokerFiles(system, "[hook]\nmode = path\n").load(PolicyMode::direct); }),
      Catch::Contains("pins it (users.pin)"));
  CHECK_THAT(error_of([&] {
               BrokerFiles(system, "[engine]\npath = /tmp/fake\n").load(PolicyMode::direct);
             }),
             Catch::Contains("engine.path"));
  CHECK(BrokerFiles(system, "[hook]\nmode = deny\n").load(PolicyMode::direct).hook_mode ==
        HookMode::deny);
  CHECK(BrokerFiles(system, "[sandbox]\ntimeout = 1h\n").load(PolicyMode::direct).timeout_ms ==
        3600000);
  CHECK(BrokerFiles("", "[hook]\nmode = path\n").load(PolicyMode::direct).hook_mode ==
        HookMode::path);
}

TEST_CASE("a system file that is not an administrator's is refused with one line",
          "[policy][floors]") {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("needs root to make root-owned and other-owned files");
    return;
  }
  BrokerFiles trusted("[sandbox]\ntimeout = 20s\n", "");
  CHECK(trusted.load().timeout_ms == 20000);

  BrokerFiles writable("[sandbox]\ntimeout = 20s\n", "");
  std::filesystem::permissions(writable.system, std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  CHECK_THAT(
      error_of([&] { writable.load(); }),
      Catch::StartsWith("system config \"" + writable.system.string() + "\" is not trusted: ") &&
          Catch::Contains("writable by its group or others"));

  BrokerFiles foreign("[sandbox]\ntimeout = 20s\n", "");
  REQUIRE(::chown(foreign.system.c_str(), 65534, 65534) == 0);
  CHECK_THAT(error_of([&] { foreign.load(PolicyMode::direct); }),
             Catch::Contains("is owned by uid 65534, not root"));

  BrokerFiles open_dir("[sandbox]\ntimeout = 20s\n", "");
  std::filesystem::permissions(open_dir.system.parent_path(), std::filesystem::perms::group_write,
                               std::filesystem::perm_options::add);
  CHECK_THAT(error_of([&] { open_dir.load(); }), Catch::Contains("writable by its group"));
}
