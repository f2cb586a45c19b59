#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "broker/protocol.hpp"
#include "broker/session.hpp"
#include "broker/unix_socket.hpp"
#include "broker/workspace_identity.hpp"
#include "common/error.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::broker;
using sandshim::UniqueFd;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

Request sample_request() {
  return {Verb::shim,
          "python",
          {"python", "-c", "print(1)"},
          {"LANG=C.UTF-8", "EMPTY="},
          "/srv/project/src",
          {{"/home/a/.config/sandshim/config", "[sandbox]\nmemory = 256m\n"}},
          TerminalSize{24, 80}};
}

std::string error_of(std::string_view payload) {
  auto decoded = decode_client_message(payload);
  const auto* error = std::get_if<ProtocolError>(&decoded);
  return error == nullptr ? "" : error->message;
}

struct SocketPair {
  UniqueFd a;
  UniqueFd b;
  SocketPair() {
    int fds[2] = {-1, -1};
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

}  // namespace

TEST_CASE("a request reads back as it was sent", "[broker]") {
  auto decoded = decode_client_message(encode(sample_request()));
  REQUIRE(std::holds_alternative<ClientMessage>(decoded));
  const auto& request = std::get<Request>(std::get<ClientMessage>(decoded));
  CHECK(request.verb == Verb::shim);
  CHECK(request.invoked_as == "python");
  CHECK(request.argv == std::vector<std::string>{"python", "-c", "print(1)"});
  CHECK(request.env == std::vector<std::string>{"LANG=C.UTF-8", "EMPTY="});
  CHECK(request.cwd == "/srv/project/src");
  REQUIRE(request.user_config.size() == 1);
  CHECK(request.user_config[0].second == "[sandbox]\nmemory = 256m\n");
  REQUIRE(request.terminal);
  CHECK(request.terminal->rows == 24);
  CHECK(request.terminal->cols == 80);
}

TEST_CASE("signals and exits read back; only the run loop's signals are forwarded", "[broker]") {
  auto signal = decode_client_message(encode(Signal{2}));
  REQUIRE(std::holds_alternative<ClientMessage>(signal));
  CHECK(std::get<Signal>(std::get<ClientMessage>(signal)).number == 2);
  CHECK(error_of(R"({"v":1,"type":"signal","signal":9})") == "signal 9 is not forwarded");
  auto exit = decode_exit(encode(Exit{130, 2}));
  REQUIRE(std::holds_alternative<Exit>(exit));
  CHECK(std::get<Exit>(exit).code == 130);
  CHECK(std::get<Exit>(exit).signal == 2);
  CHECK(std::holds_alternative<ProtocolError>(decode_exit(R"({"v":1,"type":"exit","code":300})")));
}

TEST_CASE("a frame that breaks a rule is refused, naming the rule", "[broker]") {
  CHECK(error_of("[1]") == "not a JSON object");
  CHECK(error_of("{") == "not a JSON object");
  CHECK(error_of(R"({"v":2,"type":"signal","signal":2})") == "protocol version is not 1");
  CHECK(error_of(R"({"v":1,"type":"signal","signal":2,"uid":0})") == "unknown key \"uid\"");
  CHECK(
      error_of(
          R"({"v":1,"type":"request","verb":"exec","invoked_as":"x","argv":[],"env":[],"cwd":"/"})") ==
      "verb is not one of shim, run, hook, audit");
  CHECK(
      error_of(
          R"({"v":1,"type":"request","verb":"shim","invoked_as":"../x","argv":["x"],"env":[],"cwd":"/"})") ==
      "invoked_as is not a plain command name");
  CHECK(
      error_of(
          R"({"v":1,"type":"request","verb":"run","invoked_as":"run","argv":["a\u0000b"],"env":[],"cwd":"/"})") ==
      "argv is too long or holds a NUL byte");
  CHECK(
      error_of(
          R"({"v":1,"type":"request","verb":"run","invoked_as":"run","argv":[],"env":["=x"],"cwd":"/"})") ==
      "env holds an entry without NAME=");
  CHECK(
      error_of(
          R"({"v":1,"type":"request","verb":"run","invoked_as":"run","argv":[[["x"]]],"env":[],"cwd":"/"})") ==
      "nested deeper than 3 levels");
  CHECK(
      error_of(
          R"({"v":1,"type":"request","verb":"shim","invoked_as":"sh","argv":[],"env":[],"cwd":"/"})") ==
      "a shim request has an empty argv");
}

TEST_CASE("the frame length is bounded both ways", "[broker]") {
  const unsigned char zero[4] = {0, 0, 0, 0};
  const unsigned char huge[4] = {0x7f, 0, 0, 0};
  const unsigned char one[4] = {0, 0, 0, 1};
  CHECK_FALSE(parse_frame_header(zero));
  CHECK_FALSE(parse_frame_header(huge));
  CHECK(parse_frame_header(one) == 1u);
  std::string header = frame_header(k_max_frame_bytes);
  CHECK(parse_frame_header(reinterpret_cast<const unsigned char*>(header.data())) ==
        k_max_frame_bytes);
}

TEST_CASE("a frame carries its descriptors; unexpected ones break it", "[broker]") {
  SocketPair pair;
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(send_frame(pair.a.get(), encode(sample_request()),
                     {null_fd.get(), null_fd.get(), null_fd.get(), null_fd.get()}));
  ReadResult received = read_frame(pair.b.get(), 1000, k_request_fds);
  REQUIRE(received.status == ReadStatus::ok);
  CHECK(received.frame.fds.size() == 4);
  CHECK(received.frame.payload == encode(sample_request()));

  REQUIRE(send_frame(pair.a.get(), encode(Signal{15}), {null_fd.get()}));
  CHECK(read_frame(pair.b.get(), 1000, 0).status == ReadStatus::broken);
}

TEST_CASE("a peer that closes or stays silent ends the read", "[broker]") {
  SocketPair pair;
  CHECK(read_frame(pair.b.get(), 50, 0).status == ReadStatus::timed_out);
  std::string partial = frame_header(10) + "{";
  REQUIRE(::write(pair.a.get(), partial.data(), partial.size()) ==
          static_cast<ssize_t>(partial.size()));
  pair.a.reset();
  CHECK(read_frame(pair.b.get(), 1000, 0).status == ReadStatus::closed);
}

TEST_CASE("the peer's identity is the kernel's", "[broker]") {
  SocketPair pair;
  PeerCredentials peer = peer_credentials(pair.b.get());
  CHECK(peer.uid == ::getuid());
  CHECK(peer.gid == ::getgid());
  CHECK(peer.pid == ::getpid());
}

TEST_CASE("the worker's environment never takes what steers sandshim from the caller", "[broker]") {
  auto env =
      worker_environment({"LANG=C", "SANDSHIM_CONFIG=/tmp/evil", "SANDSHIM_AUDIT_DB=/tmp/x.db",
                          "PATH=/evil", "DOCKER_HOST=tcp://x", "LD_PRELOAD=/x.so",
                          "XDG_CONFIG_HOME=/evil", "SANDSHIM_AGENT=codex", "HOME=/evil"},
                         {"PATH=/usr/bin", "SANDSHIM_AUDIT_DB=/var/lib/sandshim/audit.db",
                          "HOME=/var/lib/sandshim", "JOURNAL_STREAM=1:2"},
                         "/home/alice");
  CHECK(env == std::vector<std::string>{"LANG=C", "SANDSHIM_AGENT=codex", "PATH=/usr/bin",
                                        "SANDSHIM_AUDIT_DB=/var/lib/sandshim/audit.db",
                                        "HOME=/home/alice"});
}

TEST_CASE("system directories and engine-socket holders are never a workspace", "[broker]") {
  CHECK(is_system_directory("/run"));
  CHECK(is_system_directory("/var/run/docker"));
  CHECK(is_system_directory("/proc/self"));
  CHECK_FALSE(is_system_directory("/srv/project"));
  UniqueFd run(::open("/run", O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK_THROWS_WITH(admit_cwd(run.get(), "/run", "/home/x", {}),
                    Catch::Contains("system directories (/run, /var/run, /proc, /sys, /dev)"));
  ScratchDir dir;
  fs::create_directories(dir.path() / "ws");
  UniqueFd ws(::open((dir.path() / "ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK_THROWS_WITH(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {dir.path() / "ws/e.sock"}),
                    Catch::Contains("it holds the engine socket"));
  CHECK(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {"/var/run/docker.sock"}) ==
        dir.path() / "ws");
}

TEST_CASE("a workspace renamed or replaced by a symlink after the client opened it is refused",
          "[broker]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "ws");
  fs::create_directories(dir.path() / "other");
  UniqueFd ws(::open((dir.path() / "ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {}) == dir.path() / "ws");
  fs::rename(dir.path() / "ws", dir.path() / "moved");
  fs::create_directory_symlink(dir.path() / "other", dir.path() / "ws");
  CHECK_THROWS_WITH(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {}),
                    Catch::Contains("changed (renamed or replaced) after the caller opened it"));
}

TEST_CASE("a symlink in the workspace's path is refused", "[broker]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "real/ws");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  UniqueFd ws(::open((dir.path() / "real/ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  // The stated path goes through the link; the kernel's name of the directory does not.
  CHECK_THROWS_WITH(admit_cwd(ws.get(), dir.path() / "link/ws", "/home/x", {}),
                    Catch::Contains("changed"));
}
