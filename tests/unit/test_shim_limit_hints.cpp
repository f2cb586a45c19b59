#include <catch2/catch.hpp>

#include "policy/limit_hints.hpp"

using namespace sandshim::shim;

namespace {

const std::string k_config = "/home/u/.config/sandshim/config";

LimitFacts failed_with(const std::string& stderr_last) {
  LimitFacts facts;
  facts.exit_code = 1;
  facts.stderr_last = stderr_last;
  facts.workspace = "/home/u/project";
  return facts;
}

std::string keys_of(const LimitFacts& facts, const Policy& policy = {}) {
  return limit_keys(limit_hints(facts, policy, k_config));
}

}  // namespace

TEST_CASE("a clean run hits no limit", "[limit_hints]") {
  LimitFacts facts;
  facts.pids_refused = 0;
  CHECK(limit_hints(facts, Policy{}, k_config).empty());
  CHECK(keys_of(failed_with("AssertionError: 1 != 2\n")).empty());
}

TEST_CASE("the pids cap is named from the cgroup's events, success or not", "[limit_hints]") {
  LimitFacts facts;
  facts.pids_refused = 12;
  auto hints = limit_hints(facts, Policy{}, k_config);
  REQUIRE(hints.size() == 1);
  CHECK(describe_hint(hints[0]) ==
        "limit hit: sandbox.pids = 64 (12 process/thread start(s) refused at the cap); to lift "
        "it, add `sandbox.pids = 256` to /home/u/.config/sandshim/config");
}

TEST_CASE("without the cgroup's events, a failed thread start names the pids cap",
          "[limit_hints]") {
  CHECK(keys_of(failed_with("RuntimeError: can't start new thread\n")) == "sandbox.pids");
  LimitFacts sampled = failed_with("sh: 0: Cannot fork\n");
  sampled.pids_refused = 0;  // sampled before the refusal: the run's own words still count
  CHECK(keys_of(sampled) == "sandbox.pids");
  LimitFacts ok = failed_with("RuntimeError: can't start new thread\n");
  ok.exit_code = 0;
  CHECK(keys_of(ok).empty());
}

TEST_CASE("the deadline and the memory cap say how to lift them", "[limit_hints]") {
  LimitFacts facts;
  facts.exit_code = 124;
  facts.timed_out = true;
  auto hints = limit_hints(facts, Policy{}, k_config);
  REQUIRE(hints.size() == 1);
  CHECK(describe_hint(hints[0]) ==
        "limit hit: sandbox.timeout = 30s (the run reached its deadline); to lift it, add "
        "`sandbox.timeout = 120s` to /home/u/.config/sandshim/config");
  LimitFacts oom;
  oom.exit_code = 137;
  oom.oom_killed = true;
  CHECK(limit_hints(oom, Policy{}, k_config).at(0).suggested == "1g");
}

TEST_CASE("a full /tmp and exec refused on /tmp are told apart", "[limit_hints]") {
  CHECK(keys_of(failed_with("OSError: [Errno 28] No space left on device\n")) ==
        "sandbox.tmp_size");
  CHECK(keys_of(failed_with("sh: 1: /tmp/run.sh: Permission denied\n")) == "sandbox.tmp_exec");
  CHECK(
      keys_of(failed_with("ImportError: /tmp/x.so: failed to map segment from shared object\n")) ==
      "sandbox.tmp_exec");
  CHECK(keys_of(failed_with("open /home/u/project/x: Permission denied\n")).empty());
  Policy exec_allowed;
  exec_allowed.tmp_exec = true;
  CHECK(keys_of(failed_with("sh: 1: /tmp/run.sh: Permission denied\n"), exec_allowed).empty());
}

TEST_CASE("a write refused on the read-only workspace names sandbox.workspace", "[limit_hints]") {
  CHECK(keys_of(failed_with("OSError: [Errno 30] Read-only file system: 'out.txt'\n")) ==
        "sandbox.workspace");
  CHECK(keys_of(failed_with("EROFS: read-only file system, mkdir '/home/u/project/.nyc_output'"
                            "\nError: EROFS\n")) == "sandbox.workspace");
  // The image's root is read-only by design: no key lifts that.
  CHECK(keys_of(failed_with("OSError: [Errno 30] Read-only file system: '/usr/lib/x'\n")).empty());
  // Under rw only .git, agent settings and hook files are read-only: no line lifts that.
  Policy rw;
  rw.workspace_mode = WorkspaceMode::rw;
  LimitFacts git = failed_with(
      "fatal: Unable to create '/home/u/project/.git/index.lock': "
      "Read-only file system\n");
  std::vector<LimitHint> hints = limit_hints(git, rw, "/home/u/.config/sandshim/config");
  REQUIRE(hints.size() == 1);
  CHECK(describe_hint(hints[0]) ==
        "limit hit: sandbox.workspace = rw (a write to git's hooks, an agent's settings or a "
        "hook file was refused; all of .git is read-only through a broker or beside another run "
        "here); no line lifts it: they stay read-only in every run; make those writes on the host "
        "(git add, git commit…)");
  CHECK(keys_of(failed_with("OSError: [Errno 30] Read-only file system: '/usr/lib/x'\n"), rw)
            .empty());
}

TEST_CASE("several limits are named once each, deadline first", "[limit_hints]") {
  LimitFacts facts = failed_with("can't start new thread\nNo space left on device\n");
  facts.timed_out = true;
  facts.pids_refused = 3;
  CHECK(keys_of(facts) == "sandbox.timeout,sandbox.pids");
  facts.timed_out = false;
  CHECK(keys_of(facts) == "sandbox.pids,sandbox.tmp_size");
}

TEST_CASE("pids.events is parsed for its max count", "[limit_hints]") {
  CHECK(parse_pids_events("max 0\n") == 0);
  CHECK(parse_pids_events("max 17\n") == 17);
  CHECK_FALSE(parse_pids_events("").has_value());
  CHECK_FALSE(parse_pids_events("maxx\n").has_value());
  CHECK(pids_events_path("").empty());
  CHECK(pids_events_path("../../etc").empty());
}

TEST_CASE("a connection that found no network names sandbox.network, only where there is none",
          "[limit_hints]") {
  // npm offline (the sandbox sets npm_config_offline), python's resolver, pip, curl, node.
  for (const char* said :
       {"npm ERR! code ENOTCACHED\nnpm ERR! request to https://registry.npmjs.org/left-pad "
        "failed: cache mode is 'only-if-cached' but no cached response is available.\n",
        "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name "
        "resolution>\n",
        "WARNING: Retrying (Retry(total=4)) after connection broken by "
        "'NewConnectionError(...)': /simple/requests/\n",
        "curl: (6) Could not resolve host: example.org\n",
        "Error: getaddrinfo EAI_AGAIN registry.npmjs.org\n"}) {
    INFO(said);
    CHECK(keys_of(failed_with(said)) == "sandbox.network");
  }
  auto hints = limit_hints(failed_with("npm ERR! code ENOTCACHED\n"), Policy{}, k_config);
  REQUIRE(hints.size() == 1);
  CHECK(describe_hint(hints[0]).find("add `sandbox.network = allowlist` to " + k_config) !=
        std::string::npos);
  CHECK(describe_hint(hints[0]).find("`network.allow = HOST …`") != std::string::npos);
  Policy allowlist;
  allowlist.network = Network::allowlist;
  CHECK(keys_of(failed_with("npm ERR! code ENOTCACHED\n"), allowlist).empty());
  LimitFacts succeeded = failed_with("npm ERR! code ENOTCACHED\n");
  succeeded.exit_code = 0;
  CHECK(keys_of(succeeded).empty());
}
