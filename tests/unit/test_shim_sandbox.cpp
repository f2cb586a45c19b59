// The orchestration of a run (run/sandbox.cpp) and its outcome classification, through an
// injected engine: no container engine is involved.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/error.hpp"
#include "run/container_run.hpp"
#include "run/run_context.hpp"
#include "run/sandbox.hpp"
#include "test_audit_support.hpp"
#include "test_shim_support.hpp"

using namespace sandshim;
using namespace sandshim::shim;
using audit::RunStatus;
using audit::testing::execute_sql;
using audit::testing::query_int;
using audit::testing::query_text;

namespace {

constexpr int k_sentinel_exit = 83;  // the fake command's own exit code

// A workspace, a home and an audit database in a scratch directory, and the environment that
// keeps the user's own config and database out of the test.
struct RunFixture {
  test::ScratchDir scratch;
  std::filesystem::path db = scratch.path() / "audit.db";
  test::ScopedEnv audit_db{"SANDSHIM_AUDIT_DB", db.string()};
  test::ScopedEnv config_home{"XDG_CONFIG_HOME", (scratch.path() / "config").string()};
  test::ScopedEnv state_home{"XDG_STATE_HOME", (scratch.path() / "state").string()};
  test::ScopedEnv explicit_config{"SANDSHIM_CONFIG", ""};

  RunFixture() {
    std::filesystem::create_directories(scratch.path() / "ws");
    std::filesystem::create_directories(scratch.path() / "home");
    ::chmod(scratch.path().c_str(), 0755);
    ::chmod((scratch.path() / "ws").c_str(), 0755);
  }

  RunRequest request(const std::string& program, std::vector<Setting> overrides = {}) const {
    RunRequest request;
    request.invoked_as = program;
    request.command = {program, "-c", "pass"};
    request.overrides = {{"images.python", "sandshim/python:bookworm", {"test", 0}}};
    request.overrides.insert(request.overrides.end(), overrides.begin(), overrides.end());
    request.caller = identify_caller({"SANDSHIM_AGENT=test-agent", "SANDSHIM_SESSION_ID=s-1"});
    request.environment = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    request.cwd = scratch.path() / "ws";
    request.home = scratch.path() / "home";
    return request;
  }
};

// An engine that records what the orchestration asked and answers from a script.
struct FakeEngine {
  std::vector<RunSpec> runs;                       // the spec of each container run, in order
  std::vector<std::vector<std::string>> args;      // and its engine arguments
  std::vector<std::optional<CreateSpec>> creates;  // and its container as data (cold only)
  std::vector<ContainerResult> answers;            // what each run returns; the last one repeats
  std::optional<PoolClaim> claim;
  std::vector<std::string> refilled;  // the claimed id of each refill

  RunEngine seam() {
    RunEngine engine;
    engine.locate = [](const Policy&) {
      return Engine{"docker", "/fake/docker", {}, "", make_dialect("docker", "")};
    };
    engine.facts = [](const Engine&) {
      EngineFacts facts;
      facts.kind = "docker";
      facts.cgroup_version = "2";
      facts.memory = facts.swap = facts.cpu = facts.pids = true;
      return facts;
    };
    engine.claim_warm = [this](const Engine&, const Policy&, const RunSpec&) { return claim; };
    engine.refill_warm = [this](const Engine&, const Policy&, const RunSpec&,
                                const std::string& claimed) { refilled.push_back(claimed); };
    engine.run = [this](const Engine&, const EngineCall& call, const RunSpec& spec, const Policy&) {
      runs.push_back(spec);
      args.push_back(call.args);
      creates.push_back(call.create);
      return answers.at(std::min(runs.size(), answers.size()) - 1);
    };
    return engine;
  }
};

ContainerResult exited(int code, RunStatus status = RunStatus::error) {
  ContainerResult result;
  result.status = status;
  result.exit_code = code;
  return result;
}

std::string row_text(const std::filesystem::path& db, const std::string& column,
                     const std::string& run_id) {
  return query_text(db, "SELECT " + column + " FROM runs WHERE run_id = '" + run_id + "'");
}

}  // namespace

TEST_CASE("a refused run writes one complete refused row and starts nothing", "[sandbox]") {
  RunFixture fixture;
  FakeEngine fake;
  fake.answers = {exited(0, RunStatus::ok)};
  RunRequest request = fixture.request("perl");  // no images.perl
  CHECK(run_sandboxed(request, fake.seam()) == exit_code::k_sandbox_error);
  CHECK(fake.runs.empty());
  REQUIRE(query_int(fixture.db, "SELECT count(*) FROM runs") == 1);
  CHECK(query_text(fixture.db, "SELECT status FROM runs") == "refused");
  CHECK(query_int(fixture.db, "SELECT exit_code FROM runs") == exit_code::k_sandbox_error);
  CHECK(query_text(fixture.db, "SELECT message FROM runs").starts_with("no image is configured"));
  CHECK(query_text(fixture.db, "SELECT cwd FROM runs") == (fixture.scratch.path() / "ws").string());
  CHECK(query_text(fixture.db, "SELECT agent FROM runs") == "test-agent");
  CHECK(query_int(fixture.db, "SELECT end_ms > 0 FROM runs") == 1);
}

TEST_CASE("a cold run records its row from begin to completion", "[sandbox]") {
  RunFixture fixture;
  FakeEngine fake;
  fake.answers = {exited(k_sentinel_exit)};
  CHECK(run_sandboxed(fixture.request("python"), fake.seam()) == k_sentinel_exit);
  REQUIRE(fake.runs.size() == 1);
  const RunSpec& spec = fake.runs.front();
  CHECK_FALSE(spec.warm);
  CHECK(spec.cwd == fixture.scratch.path() / "ws");
  CHECK(query_text(fixture.db, "SELECT run_id FROM runs") == spec.run_id);
  CHECK(row_text(fixture.db, "status", spec.run_id) == "error");
  CHECK(row_text(fixture.db, "exit_code", spec.run_id) == std::to_string(k_sentinel_exit));
  CHECK(row_text(fixture.db, "image", spec.run_id) == "sandshim/python:bookworm");
  CHECK(row_text(fixture.db, "limits", spec.run_id).find("enforced=") != std::string::npos);
  CHECK(row_text(fixture.db, "agent_session", spec.run_id) == "s-1");
  CHECK(fake.refilled.empty());  // pool.size = 0: no pool is touched
}

TEST_CASE("a WAL grown large is folded after the run, not during it", "[sandbox]") {
  RunFixture fixture;
  FakeEngine fake;
  fake.answers = {exited(k_sentinel_exit)};
  CHECK(run_sandboxed(fixture.request("python"), fake.seam()) == k_sentinel_exit);
  auto wal_size = [&] { return std::filesystem::file_size(fixture.db.string() + "-wal"); };
  REQUIRE(wal_size() > 0);
  {
    audit::Store store = audit::testing::open_test_store(fixture.db);
    for (int i = 0; !store.wal_needs_folding() && i < 2000; ++i) {
      store.begin_run(audit::testing::sample_run("grow-" + std::to_string(i)));
    }
  }
  REQUIRE(wal_size() >= 256 * 1024);
  CHECK(run_sandboxed(fixture.request("python"), fake.seam()) == k_sentinel_exit);
  CHECK(wal_size() > 0);  // the run returned before any fold
  for (int i = 0; i < 200 && wal_size() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the folder waits 1 s for us
  }
  CHECK(wal_size() == 0);
  // Read only now: the test's own connection folds the WAL when it closes.
  CHECK(row_text(fixture.db, "exit_code", fake.runs.back().run_id) ==
        std::to_string(k_sentinel_exit));
}

TEST_CASE("audit begin failing with audit.required refuses and runs nothing", "[sandbox]") {
  RunFixture fixture;
  { audit::testing::open_test_store(fixture.db); }
  execute_sql(
      fixture.db,
      "CREATE TRIGGER no_runs BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'full'); END");
  FakeEngine fake;
  fake.answers = {exited(k_sentinel_exit)};
  SECTION("required: refused") {
    CHECK(run_sandboxed(fixture.request("python"), fake.seam()) == exit_code::k_sandbox_error);
    CHECK(fake.runs.empty());
  }
  SECTION("not required: runs unrecorded") {
    auto request = fixture.request("python", {{"audit.required", "false", {"test", 0}}});
    CHECK(run_sandboxed(request, fake.seam()) == k_sentinel_exit);
    CHECK(fake.runs.size() == 1);
  }
}

TEST_CASE("a warm claim ending in engine_error runs cold under a new row", "[sandbox][pool]") {
  RunFixture fixture;
  FakeEngine fake;
  fake.claim =
      PoolClaim{"00000000000000aa", "sha256:abc", {"run", "--detach", "warm-create"}, 0, ""};
  ContainerResult gone = exited(exit_code::k_sandbox_error, RunStatus::engine_error);
  gone.message = "the warm container was removed outside sandshim before the run";
  fake.answers = {gone, exited(0, RunStatus::ok)};
  auto request = fixture.request("python", {{"pool.size", "1", {"test", 0}}});
  CHECK(run_sandboxed(request, fake.seam()) == 0);
  REQUIRE(fake.runs.size() == 2);
  const RunSpec& warm = fake.runs[0];
  const RunSpec& cold = fake.runs[1];
  CHECK(warm.warm);
  CHECK(warm.run_id == "00000000000000aa");
  CHECK(fake.args[0].front() == "exec");
  CHECK_FALSE(cold.warm);
  CHECK(cold.run_id != warm.run_id);
  CHECK(cold.image_id.empty());
  CHECK(fake.args[1].front() == "run");
  CHECK_FALSE(fake.creates[0]);  // an exec creates nothing
  REQUIRE(fake.creates[1]);      // the cold attempt's arguments serialize its spec
  CHECK(cli_arguments(*fake.creates[1], false) == fake.args[1]);
  CHECK(fake.creates[1]->name == "sandshim-" + cold.run_id);
  CHECK(row_text(fixture.db, "status", warm.run_id) == "engine_error");
  CHECK(row_text(fixture.db, "message", warm.run_id).ends_with("; ran cold as run " + cold.run_id));
  CHECK(row_text(fixture.db, "warm", warm.run_id) == "1");
  CHECK(row_text(fixture.db, "engine_args", warm.run_id).find("warm-create") != std::string::npos);
  CHECK(row_text(fixture.db, "status", cold.run_id) == "ok");
  CHECK(row_text(fixture.db, "warm", cold.run_id) == "0");
  CHECK(row_text(fixture.db, "engine_args", cold.run_id).find("warm-create") == std::string::npos);
  CHECK(fake.refilled == std::vector<std::string>{warm.run_id});
}

TEST_CASE("the pool is refilled after the row is complete, and a failed refill changes nothing",
          "[sandbox][pool]") {
  RunFixture fixture;
  FakeEngine fake;
  fake.claim = PoolClaim{"00000000000000bb", "sha256:abc", {"run", "--detach", "warm"}, 0, ""};
  fake.answers = {exited(k_sentinel_exit)};
  RunEngine engine = fake.seam();
  std::string status_at_refill;
  engine.refill_warm = [&](const Engine&, const Policy&, const RunSpec&, const std::string&) {
    status_at_refill = row_text(fixture.db, "status", "00000000000000bb");
    throw Fatal("cannot start a detached process: fork failed: Resource temporarily unavailable");
  };
  auto request = fixture.request("python", {{"pool.size", "1", {"test", 0}}});
  CHECK(run_sandboxed(request, engine) == k_sentinel_exit);
  CHECK(status_at_refill == "error");  // the command's own outcome, already recorded
  CHECK(query_int(fixture.db, "SELECT count(*) FROM runs") == 1);
  CHECK(row_text(fixture.db, "exit_code", "00000000000000bb") == std::to_string(k_sentinel_exit));
}

TEST_CASE("the run's exit code and row follow its outcome", "[sandbox]") {
  RunFixture fixture;
  FakeEngine fake;
  ContainerResult timeout = exited(exit_code::k_timeout, RunStatus::timeout);
  timeout.signal = SIGKILL;
  fake.answers = {timeout};
  CHECK(run_sandboxed(fixture.request("python"), fake.seam()) == exit_code::k_timeout);
  CHECK(row_text(fixture.db, "status", fake.runs.front().run_id) == "timeout");
}

TEST_CASE("a dry run prints the engine command and records nothing", "[sandbox]") {
  RunFixture fixture;
  FakeEngine fake;
  fake.answers = {exited(0, RunStatus::ok)};
  RunRequest request = fixture.request("python");
  request.dry_run = true;
  CHECK(run_sandboxed(request, fake.seam()) == 0);
  CHECK(fake.runs.empty());
  CHECK_FALSE(std::filesystem::exists(fixture.db));
}

namespace {

RunSpec python_spec(bool warm = false) {
  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.command = {"/usr/bin/python3", "x.py"};
  spec.image = "sandshim/python:bookworm";
  spec.warm = warm;
  return spec;
}

}  // namespace

TEST_CASE("the outcome is decided from the run's facts alone", "[sandbox][classify]") {
  Policy policy;
  RunFacts facts;
  SECTION("our deadline: 124, timeout") {
    facts.timed_out = true;
    facts.client_code = 137;
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::timeout);
    CHECK(outcome.exit_code == exit_code::k_timeout);
    CHECK(outcome.message.starts_with("python3 ran past its deadline"));
  }
  SECTION("our signal: 128+N, killed") {
    facts.received_signal = SIGTERM;
    facts.client_code = 0;
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::killed);
    CHECK(outcome.exit_code == 128 + SIGTERM);
    CHECK(outcome.message == "stopped by SIGTERM; the container was stopped");
  }
  SECTION("the engine's error: 125, its line replaced by ours") {
    facts.client_code = 125;
    facts.stderr_head = "docker: Error response from daemon: No such image: x.\n";
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::engine_error);
    CHECK(outcome.exit_code == exit_code::k_sandbox_error);
    CHECK(outcome.replaces_engine_output);
  }
  SECTION("the command's own 125 is the command's") {
    facts.client_code = 125;
    facts.stderr_head = "my own error\n";
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::error);
  }
  SECTION("137 with the engine's oom event: oom; without: killed") {
    facts.client_code = 137;
    facts.oom_event = true;
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::oom);
    facts.oom_event = false;
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::killed);
  }
  SECTION("a lost engine: engine_error, and the container may outlive the client") {
    facts.client_code = 125;
    facts.stderr_last = "time=\"x\" level=error msg=\"error waiting for container: EOF\"\n";
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::engine_error);
    CHECK(outcome.engine_lost);
  }
  SECTION("a warm container removed before the exec; the same line from a cold run is output") {
    facts.client_code = 1;
    facts.stderr_head = "Error response from daemon: No such container: sandshim-0123456789abcdef";
    CHECK(classify_outcome(facts, python_spec(true), policy).status == RunStatus::engine_error);
    CHECK(classify_outcome(facts, python_spec(false), policy).status == RunStatus::error);
  }
  SECTION("exec's 126 for a missing program is run's 127") {
    facts.client_code = 126;
    facts.stdout_head = "OCI runtime exec failed: exec: \"x\": executable file not found";
    CHECK(classify_outcome(facts, python_spec(true), policy).exit_code == exit_code::k_not_found);
    CHECK(classify_outcome(facts, python_spec(false), policy).exit_code == 126);
  }
  SECTION("exit codes of the command: 0 ok, N error, 128+N its signal") {
    facts.client_code = 0;
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::ok);
    facts.client_code = k_sentinel_exit;
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::error);
    facts.client_code = 128 + SIGSEGV;
    CHECK(classify_outcome(facts, python_spec(), policy).signal == SIGSEGV);
  }
}

TEST_CASE("over the Engine API the engine's part comes typed, and stderr is the program's",
          "[sandbox][classify]") {
  Policy policy;
  RunFacts facts;
  facts.over_api = true;
  SECTION("an engine lost mid-run: engine_error, the container may outlive the client") {
    facts.client_code = 125;
    facts.api_fault =
        ApiFault{EngineErrorKind::unreachable, true, "waiting for the container: EOF"};
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::engine_error);
    CHECK(outcome.engine_lost);
    CHECK(outcome.message.starts_with(
        "the container engine was lost while the command ran (waiting for the container: EOF)"));
  }
  SECTION("the image missing at create: 125 with the image's fix, nothing ran") {
    facts.client_code = 125;
    facts.api_fault = ApiFault{EngineErrorKind::image_missing, false, "No such image: x"};
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::engine_error);
    CHECK(outcome.message.find("`sandshim images build`") != std::string::npos);
    CHECK(outcome.message.ends_with("nothing ran"));
  }
  SECTION("a program the engine could not start keeps docker run's 127, with one line") {
    facts.client_code = 127;
    facts.api_fault = ApiFault{EngineErrorKind::other, false, "exec: \"x\": not found"};
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::error);
    CHECK(outcome.exit_code == 127);
    CHECK(outcome.message.starts_with("the engine could not start python3 in "));
  }
  SECTION("a socket that refused us: 125, the permission's fix") {
    facts.client_code = 126;
    facts.api_fault = ApiFault{EngineErrorKind::permission, false, "connect: Permission denied"};
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::engine_error);
  }
  SECTION("a program's own engine-like line and 125 are the program's (the client's are not)") {
    facts.client_code = 125;
    facts.stderr_head = "Error response from daemon: made up by the program\n";
    facts.stderr_last = "time=\"x\" level=error msg=\"error waiting for container: EOF\"\n";
    Outcome outcome = classify_outcome(facts, python_spec(), policy);
    CHECK(outcome.status == RunStatus::error);
    CHECK(outcome.exit_code == 125);
    CHECK(outcome.message.empty());
    facts.over_api = false;  // control: from the client, those lines are the engine's
    CHECK(classify_outcome(facts, python_spec(), policy).status == RunStatus::engine_error);
  }
}

TEST_CASE("an API fault report survives the pipe whole, and nothing else decodes as one",
          "[sandbox][classify]") {
  ApiFault fault{EngineErrorKind::image_missing, false, "No such image: \"a\nb\" \xff"};
  auto decoded = decode_api_fault(encode_api_fault(fault));
  REQUIRE(decoded);
  CHECK(decoded->kind == EngineErrorKind::image_missing);
  CHECK_FALSE(decoded->lost);
  CHECK(decoded->reason.starts_with("No such image: \"a\nb\" "));
  ApiFault lost{EngineErrorKind::unreachable, true, std::string(10000, 'x')};
  std::string encoded = encode_api_fault(lost);
  CHECK(encoded.size() < k_api_fault_report_bytes);
  std::string controls(3000, '\x01');  // each escaped to six bytes: still within the bound
  CHECK(encode_api_fault({EngineErrorKind::other, false, controls}).size() <
        k_api_fault_report_bytes);
  CHECK(decode_api_fault(encoded)->reason.size() == k_api_fault_reason_bytes);
  CHECK_FALSE(decode_api_fault(encoded.substr(0, encoded.size() / 2)));
  CHECK_FALSE(decode_api_fault(""));
  CHECK_FALSE(decode_api_fault(R"({"kind":"bogus","lost":false,"reason":""})"));
  CHECK_FALSE(decode_api_fault(R"({"kind":"other","lost":"no","reason":""})"));
}
