#include <catch2/catch.hpp>

#include <unistd.h>

#include "policy/broker_policy.hpp"
#include "run/sandbox.hpp"
#include "skip.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::test::ScratchDir;

namespace {

// A broker's system file with TEXT, root-owned in a directory only its owner enters (the loader
// refuses any other); nullopt, the test skipped, unless the tests run as root.
std::optional<std::filesystem::path> system_file_or_skip(ScratchDir& dir, const std::string& text) {
  if (::geteuid() != 0) {
    sandshim::test::skip_test("the system file must be root-owned: run the unit tests as root");
    return std::nullopt;
  }
  auto file = dir.write("etc/config", text);
  std::filesystem::permissions(dir.path() / "etc", std::filesystem::perms::owner_all);
  return file;
}

}  // namespace

TEST_CASE("a broker's caller loads in broker mode, from the broker's file and the sent texts only",
          "[broker_policy]") {
  PolicyInputs direct = policy_inputs(std::nullopt, "/ws", {{"sandbox.pids", "8", {}}});
  CHECK(direct.mode == PolicyMode::direct);
  CHECK(!direct.user_files.has_value());
  CHECK(direct.system_file == k_system_config);
  CHECK(direct.command_line.size() == 1);

  BrokerPolicySource source{"/etc/broker-floor", {{"/home/u/.config/sandshim/config", "x"}}, {}};
  PolicyInputs broker = policy_inputs(source, "/ws", {{"sandbox.pids", "8", {}}});
  CHECK(broker.mode == PolicyMode::broker);
  REQUIRE(broker.user_files.has_value());
  CHECK(broker.user_files->empty());  // never the broker's own environment's files
  CHECK(broker.system_file == "/etc/broker-floor");
  CHECK(broker.user_texts == source.user_texts);
  CHECK(broker.workspace == "/ws");
  CHECK(broker.command_line.size() == 1);
}

TEST_CASE("a sent config that loosens the broker's floor is refused; one that tightens applies",
          "[broker_policy]") {
  ScratchDir dir;
  auto system = system_file_or_skip(dir, "[sandbox]\ntimeout = 20s\n");
  if (!system) {
    return;
  }
  BrokerPolicySource tightening{*system, {{"/u/config", "[sandbox]\ntimeout = 10s\n"}}, {}};
  CHECK(load_policy(policy_inputs(tightening, {})).timeout_ms == 10000);
  BrokerPolicySource loosening{*system, {{"/u/config", "[sandbox]\nnetwork = bridge\n"}}, {}};
  CHECK_THROWS_WITH(load_policy(policy_inputs(loosening, {})),
                    Catch::StartsWith("policy refused: /u/config:2: sandbox.network = "));
  CHECK_THROWS_AS(load_policy(policy_inputs(tightening, {}, {{"sandbox.timeout", "1h", {}}})),
                  PolicyError);
}

TEST_CASE("a caller may name the floor's own image for a command, never another",
          "[broker_policy]") {
  ScratchDir dir;
  auto system = system_file_or_skip(dir, "[images]\nbash = sandshim/wrap:bookworm\n");
  if (!system) {
    return;
  }
  BrokerPolicySource source{*system, {}, {}};
  CHECK(load_policy(policy_inputs(source, {}, {{"images.bash", "sandshim/wrap:bookworm", {}}}))
            .images.at("bash") == "sandshim/wrap:bookworm");
  CHECK_THROWS_AS(load_policy(policy_inputs(source, {}, {{"images.bash", "debian:12", {}}})),
                  PolicyError);
  CHECK_THROWS_AS(load_policy(policy_inputs(source, {}, {{"images.perl", "debian:12", {}}})),
                  PolicyError);
}

TEST_CASE("only a broker's store is keyed and anchored", "[broker_policy]") {
  ScratchDir dir;
  Policy policy;
  policy.audit_key_file = (dir.path() / "chain.key").string();
  policy.audit_anchor_file = (dir.path() / "anchor.log").string();
  audit_store_options(policy, dir.path() / "a.db", false);
  CHECK(!std::filesystem::exists(dir.path() / "chain.key"));
  auto direct = audit_store_options(policy, dir.path() / "a.db", false);
  CHECK(!direct.key.has_value());
  CHECK(direct.anchor_file.empty());
  auto broker = audit_store_options(policy, dir.path() / "a.db", true);
  CHECK(broker.key.has_value());
  CHECK(broker.anchor_file == dir.path() / "anchor.log");
  CHECK(std::filesystem::exists(dir.path() / "chain.key"));
}

TEST_CASE("direct mode never writes the broker's keyed database; the broker's worker does",
          "[broker_policy]") {
  ScratchDir dir;
  auto broker_db = dir.path() / "broker" / "audit.db";
  auto system = system_file_or_skip(dir, "[audit]\ndb = " + broker_db.string() + "\nkey_file = " +
                                             (dir.path() / "chain.key").string() + "\n");
  if (!system) {
    return;
  }
  PolicyInputs direct(std::filesystem::path{}, {});
  direct.system_file = *system;
  direct.user_files = std::vector<ConfigFile>{};
  Policy in_direct = load_policy(direct);
  CHECK(in_direct.audit_db.empty());  // its own default database instead
  CHECK(in_direct.audit_key_file.empty());
  CHECK(in_direct.broker_audit_db == broker_db.string());
  CHECK_THROWS_WITH(audit_store_options(in_direct, broker_db, false),
                    Catch::StartsWith("direct mode never writes the broker's audit database"));
  CHECK_NOTHROW(audit_store_options(in_direct, dir.path() / "mine.db", false));
  Policy in_broker = load_policy(policy_inputs(BrokerPolicySource{*system, {}, {}}, {}));
  CHECK(in_broker.audit_db == broker_db.string());
  CHECK(in_broker.broker_audit_db.empty());
}

TEST_CASE(
    "a broker's run takes the store its worker opened ahead: the same database, anchor and key "
    "only, once",
    "[broker_policy]") {
  ScratchDir dir;
  auto anchor = dir.write("anchors/anchor.log", "");
  auto system = system_file_or_skip(dir, "[audit]\ndb = " + (dir.path() / "audit.db").string() +
                                             "\nkey_file = " + (dir.path() / "chain.key").string() +
                                             "\nanchor_file = " + anchor.string() + "\n");
  if (!system) {
    return;
  }
  std::shared_ptr<PreopenedStore> opened = preopen_broker_store(*system);
  REQUIRE(opened != nullptr);
  REQUIRE(opened->store != nullptr);
  RunRequest request;
  request.preopened_store = opened;
  Policy policy = load_policy(policy_inputs(BrokerPolicySource{*system, {}, {}}, {}));
  const auto options = audit_store_options(policy, policy.effective_audit_db(), true);

  auto elsewhere = options;
  elsewhere.path = dir.path() / "other.db";
  CHECK(take_preopened_store(request, elsewhere) == nullptr);
  auto other_anchor = options;
  other_anchor.anchor_file = dir.path() / "other.log";
  CHECK(take_preopened_store(request, other_anchor) == nullptr);
  auto replaced_key = options;
  replaced_key.key->secret = std::string(32, 'k');
  CHECK(take_preopened_store(request, replaced_key) == nullptr);
  auto unkeyed = options;
  unkeyed.key.reset();
  CHECK(take_preopened_store(request, unkeyed) == nullptr);

  auto taken = take_preopened_store(request, options);
  REQUIRE(taken != nullptr);
  CHECK(taken->path() == dir.path() / "audit.db");
  CHECK(take_preopened_store(request, options) == nullptr);  // once
  CHECK(take_preopened_store(RunRequest{}, options) == nullptr);
}

TEST_CASE("a broker whose system file does not load opens nothing ahead", "[broker_policy]") {
  ScratchDir dir;
  auto system = system_file_or_skip(dir, "[audit]\nno_such_key = 1\n");
  if (!system) {
    return;
  }
  CHECK_THROWS_AS(load_policy(policy_inputs(BrokerPolicySource{*system, {}, {}}, {})), PolicyError);
  CHECK(preopen_broker_store(*system) == nullptr);
}
