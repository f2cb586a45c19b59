// An ssh:// engine (engine/endpoint.cpp, engine/ssh_connect.cpp): the endpoint's strict syntax,
// ssh's command line (no prompt, no config file, strict host keys), its failures as one line,
// and a real connection that fails as a typed fault naming why.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "engine/api_client.hpp"
#include "engine/endpoint.hpp"
#include "engine/ssh_connect.hpp"
#include "skip.hpp"
#include "test_shim_support.hpp"

using namespace std::chrono_literals;
using sandshim::engine::ssh_endpoint;
using sandshim::engine::SshEndpoint;
using sandshim::engine::detail::ssh_argv;
using sandshim::engine::detail::ssh_failure;

namespace {

// Whether `argv` holds `option` right after an `-o`.
bool has_option(const std::vector<std::string>& argv, const std::string& option) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-o" && argv[i + 1] == option) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> tail(const std::vector<std::string>& argv, size_t n) {
  return {argv.end() - static_cast<std::ptrdiff_t>(n), argv.end()};
}

}  // namespace

TEST_CASE("ssh://[user@]host[:port] is an ssh endpoint; anything else is none", "[engine-ssh]") {
  CHECK(ssh_endpoint("ssh://me@builder", "", "") == SshEndpoint{"me", "builder", "", "", ""});
  CHECK(ssh_endpoint("ssh://builder.example:2222", "/k", "/kh") ==
        SshEndpoint{"", "builder.example", "2222", "/k", "/kh"});
  CHECK(ssh_endpoint("ssh://root@10.0.0.2:22", "", "") ==
        SshEndpoint{"root", "10.0.0.2", "22", "", ""});
  CHECK(ssh_endpoint("ssh://me@[fd00::2]:22", "", "") ==
        SshEndpoint{"me", "fd00::2", "22", "", ""});
  for (const char* bad :
       {"ssh://", "ssh://me@", "ssh://@host", "ssh://-oProxyCommand=x", "ssh://me@-host",
        "ssh://-l@host", "ssh://host:0", "ssh://host:65536", "ssh://host:22x",
        "ssh://host:", "ssh://host/run/podman/podman.sock", "ssh://a@b@host", "ssh://host name",
        "ssh://[fd00::2", "ssh://[zz]:22", "tcp://host:2376", "unix:///x.sock", ""}) {
    INFO(bad);
    CHECK_FALSE(ssh_endpoint(bad, "", ""));
  }
  CHECK(sandshim::engine::describe(SshEndpoint{"me", "h", "2222", "", ""}) == "ssh://me@h:2222");
  CHECK(sandshim::engine::describe(SshEndpoint{"", "h", "", "", ""}) == "ssh://h");
  CHECK(sandshim::engine::is_remote(SshEndpoint{"", "h", "", "", ""}));
}

TEST_CASE("ssh's command line never prompts, reads no config and trusts only known host keys",
          "[engine-ssh]") {
  auto argv = ssh_argv("/usr/bin/ssh", SshEndpoint{"me", "builder", "2222", "", ""}, 2500ms);
  CHECK(argv[0] == "/usr/bin/ssh");
  CHECK(argv[1] == "-F");
  CHECK(argv[2] == "none");
  for (const char* option :
       {"BatchMode=yes", "StrictHostKeyChecking=yes", "UpdateHostKeys=no", "IdentityAgent=none",
        "ForwardAgent=no", "ClearAllForwardings=yes", "ControlMaster=no", "ControlPath=none",
        "PermitLocalCommand=no", "RequestTTY=no", "ProxyCommand=none", "ConnectTimeout=3"}) {
    INFO(option);
    CHECK(has_option(argv, option));
  }
  CHECK(tail(argv, 9) == std::vector<std::string>{"-l", "me", "-p", "2222", "--", "builder",
                                                  "docker", "system", "dial-stdio"});
  CHECK(std::find(argv.begin(), argv.end(), "-i") == argv.end());
  CHECK_FALSE(has_option(argv, "GlobalKnownHostsFile=none"));
}

TEST_CASE("an entry's own key and known_hosts are the only ones ssh reads", "[engine-ssh]") {
  auto argv = ssh_argv("/usr/bin/ssh", SshEndpoint{"", "h", "", "/keys/id", "/keys/kh"}, 100ms);
  CHECK(has_option(argv, "IdentitiesOnly=yes"));
  CHECK(std::find(argv.begin(), argv.end(), "/keys/id") -
            std::find(argv.begin(), argv.end(), "-i") ==
        1);
  CHECK(has_option(argv, "UserKnownHostsFile=/keys/kh"));
  CHECK(has_option(argv, "GlobalKnownHostsFile=none"));
  CHECK(has_option(argv, "ConnectTimeout=1"));
  CHECK(tail(argv, 5) == std::vector<std::string>{"--", "h", "docker", "system", "dial-stdio"});
  CHECK(std::find(argv.begin(), argv.end(), "-l") == argv.end());
}

TEST_CASE("ssh's failures are one line saying what and what to do", "[engine-ssh]") {
  SshEndpoint at{"me", "h", "", "", ""};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"No ED25519 host key is known for h and you have requested strict checking.\r\nHost key "
       "verification failed.\r\n",
       "ssh://me@h: its host key is not in known_hosts (No ED25519 host key is known for h and "
       "you have requested strict checking.): check its fingerprint"},
      {"@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification "
       "failed.\n",
       "ssh://me@h: its host key changed since known_hosts took it"},
      {"me@h: Permission denied (publickey).\r\n",
       "ssh://me@h: the login was refused (me@h: Permission denied (publickey).)"},
      {"ssh: connect to host h port 22: Connection refused\r\n",
       "ssh://me@h: ssh cannot reach it (ssh: connect to host h port 22: Connection refused)"},
      {"ssh: Could not resolve hostname h: Name or service not known\r\n",
       "ssh://me@h: ssh cannot reach it"},
      {"bash: line 1: docker: command not found\n",
       "ssh://me@h: docker does not answer there (bash: line 1: docker: command not found)"},
      {"something else\nand more\n", "ssh://me@h: ssh failed (something else)"},
  };
  for (const auto& [said, line] : cases) {
    INFO(said);
    CHECK_THAT(ssh_failure(at, said), Catch::StartsWith(line));
    CHECK(ssh_failure(at, said).find('\n') == std::string::npos);
  }
  CHECK(ssh_failure(at, "").empty());
}

TEST_CASE("an ssh engine nobody answers is an unreachable fault in ssh's words", "[engine-ssh]") {
  if (!sandshim::engine::detail::find_ssh_client()) {
    sandshim::test::skip_test("no ssh client (install/deps.sh installs openssh-client)");
    return;
  }
  sandshim::test::ScratchDir dir;
  std::ofstream(dir.path() / "known_hosts") << "";
  // Port 1 on loopback: nothing listens, the connect is refused at once.
  SshEndpoint nobody{"", "127.0.0.1", "1", dir.path() / "no-key", dir.path() / "known_hosts"};
  auto reply = sandshim::engine::ApiClient(nobody, 5s).ping();
  CHECK(reply.fault == sandshim::engine::Fault::unreachable);
  CHECK_THAT(reply.detail, Catch::StartsWith("ssh://127.0.0.1:1: ssh cannot reach it ("));
  CHECK_THAT(reply.detail, Catch::Contains("Connection refused"));
}
