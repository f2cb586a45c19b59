#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "engine/engine_api.hpp"
#include "engine/image_probe.hpp"
#include "test_shim_support.hpp"

using sandshim::UniqueFd;
using sandshim::shim::Engine;
using sandshim::shim::engine_api_socket;
using sandshim::shim::ImageProbe;
using sandshim::test::ScratchDir;

namespace {

const std::string k_id = "sha256:bdd3f4842b0474560ec9a2ac163eb3e227584aad41d84cdb944891396672f1d6";

std::string ok_answer(const std::string& body) {
  return "HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nContent-Type: application/json\r\n\r\n" + body;
}

// A one-shot engine socket: accepts one connection, keeps the request, sends `answer`, closes.
class FakeEngineSocket {
 public:
  FakeEngineSocket(const std::filesystem::path& path, std::string answer)
      : m_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(m_fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(m_fd.get(), 1) == 0);
    m_thread = std::thread([this, answer = std::move(answer)] { serve(answer); });
  }
  FakeEngineSocket(const FakeEngineSocket&) = delete;
  FakeEngineSocket& operator=(const FakeEngineSocket&) = delete;
  ~FakeEngineSocket() { m_thread.join(); }

  const std::string& request() {
    m_thread.join();
    m_thread = std::thread([] {});
    return m_request;
  }

 private:
  void serve(const std::string& answer) {
    UniqueFd client(::accept4(m_fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char buffer[4096];
    while (m_request.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::read(client.get(), buffer, sizeof buffer);
      if (n <= 0) {
        return;
      }
      m_request.append(buffer, static_cast<size_t>(n));
    }
    ssize_t ignored = ::write(client.get(), answer.data(), answer.size());
    (void)ignored;
  }

  UniqueFd m_fd;
  std::string m_request;
  std::thread m_thread;
};

}  // namespace

TEST_CASE("an engine with a local socket is asked over its API", "[image_probe]") {
  auto with = [](const std::string& kind, const std::string& endpoint) {
    return Engine{kind, "/usr/bin/" + kind, {"XDG_RUNTIME_DIR=/run/user/1000"}, endpoint, {}};
  };
  CHECK(engine_api_socket(with("docker", "")) == std::filesystem::path("/var/run/docker.sock"));
  CHECK(engine_api_socket(with("docker", "unix:///run/user/1000/docker.sock")) ==
        std::filesystem::path("/run/user/1000/docker.sock"));
  CHECK_FALSE(engine_api_socket(with("docker", "ssh://me@builder")));
  CHECK_FALSE(engine_api_socket(with("docker", "tcp://builder:2376")));
  CHECK(engine_api_socket(with("podman", "")) ==
        std::filesystem::path(::geteuid() == 0 ? "/run/podman/podman.sock"
                                               : "/run/user/1000/podman/podman.sock"));
  CHECK_FALSE(engine_api_socket(with("podman", "ssh://me@builder/run/podman/podman.sock")));
}

TEST_CASE("the id comes only from a 200 answer with a string Id", "[image_probe]") {
  ScratchDir dir;
  auto socket = dir.path() / "engine.sock";
  for (const std::string& answer :
       {std::string("HTTP/1.0 404 Not Found\r\n\r\n{\"message\":\"No such image\"}"),
        ok_answer("not json"), ok_answer(R"({"Id":42})"), ok_answer(R"({"Size":1})"),
        std::string("HTTP/1.0 200 OK"), std::string("")}) {
    FakeEngineSocket engine_socket(socket, answer);
    Engine engine{"docker", dir.path() / "no-client", {}, "unix://" + socket.string(), {}};
    CHECK(ImageProbe(engine, "sandshim/sh:bookworm").result(5000).empty());
    engine_socket.request();
    std::filesystem::remove(socket);
  }
}

TEST_CASE("a local engine's socket answers the probe without a client", "[image_probe]") {
  ScratchDir dir;
  auto socket = dir.path() / "engine.sock";
  FakeEngineSocket engine_socket(socket, ok_answer(R"({"Id":")" + k_id + R"("})"));
  // No client exists at this path: the id can only have come from the socket.
  Engine engine{"docker", dir.path() / "no-client", {}, "unix://" + socket.string(), {}};
  ImageProbe probe(engine, "sandshim/sh:bookworm");
  CHECK(probe.result(5000) == k_id);
  CHECK(engine_socket.request().starts_with("GET /images/sandshim/sh:bookworm/json HTTP/1.1\r\n"));
}

TEST_CASE("podman's API service answers the probe without a client", "[image_probe]") {
  ScratchDir dir;
  auto socket = dir.path() / "podman.sock";
  FakeEngineSocket engine_socket(socket, ok_answer(R"({"Id":")" + k_id + R"("})"));
  Engine podman{"podman", dir.path() / "no-client", {}, "unix://" + socket.string(), {}};
  CHECK(ImageProbe(podman, "sandshim/sh:bookworm").result(5000) == k_id);
}

TEST_CASE("without a reachable socket the probe asks the client", "[image_probe]") {
  ScratchDir dir;
  auto client = dir.write("docker",
                          "#!/bin/sh\n"
                          "[ \"$*\" = 'image inspect --format={{.Id}} sandshim/sh:bookworm' ] && "
                          "echo sha256:from-client\n");
  ::chmod(client.c_str(), 0755);
  Engine engine{
      "docker", client, {}, "unix://" + (dir.path() / "nobody-listens.sock").string(), {}};
  ImageProbe probe(engine, "sandshim/sh:bookworm");
  CHECK(probe.result(5000) == "sha256:from-client");

  // An endpoint nobody answers on: podman's default socket may have a service behind it here.
  Engine podman{
      "podman", client, {}, "unix://" + (dir.path() / "nobody-listens.sock").string(), {}};
  ImageProbe by_client(podman, "sandshim/sh:bookworm");
  CHECK(by_client.result(5000) == "sha256:from-client");
  ImageProbe unknown(podman, "other:image");
  CHECK(unknown.result(5000) == "");
}

TEST_CASE("an engine that does not answer in time leaves the id empty", "[image_probe]") {
  ScratchDir dir;
  auto client = dir.write("docker", "#!/bin/sh\nexec sleep 30\n");
  ::chmod(client.c_str(), 0755);
  Engine engine{
      "podman", client, {}, "unix://" + (dir.path() / "nobody-listens.sock").string(), {}};
  ImageProbe probe(engine, "sandshim/sh:bookworm");
  auto started = std::chrono::steady_clock::now();
  CHECK(probe.result(200).empty());
  // Killed, not waited for: far less than the client's 30 s.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
}
