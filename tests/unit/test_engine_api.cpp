// The engine client against a small Beast server on a unix socket in a temporary directory:
// well-formed answers, the engine's errors, malformed and slow answers, event and attach streams.
#include <poll.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "engine/api_client.hpp"
#include "engine/endpoint.hpp"
#include "test_engine_support.hpp"
#include "test_shim_support.hpp"

using namespace std::chrono_literals;
using sandshim::engine::ApiClient;
using sandshim::engine::AttachStream;
using sandshim::engine::Channel;
using sandshim::engine::Event;
using sandshim::engine::EventFilter;
using sandshim::engine::EventStream;
using sandshim::engine::Fault;
using sandshim::engine::FrameDecoder;
using sandshim::engine::Output;
using sandshim::test::ScratchDir;
using namespace sandshim::test::engine_server;

namespace {

bool wait_readable(int fd) {
  pollfd ready{fd, POLLIN, 0};
  return ::poll(&ready, 1, 5000) == 1;
}

// Every event the stream delivers until `count` have come or the stream ends.
std::vector<Event> read_events(EventStream& stream, size_t count) {
  std::vector<Event> events;
  while (events.size() < count && !stream.ended() && wait_readable(stream.fd())) {
    for (auto& event : stream.read_available()) {
      events.push_back(std::move(event));
    }
  }
  return events;
}

const char* const k_oom_event =
    R"({"status":"oom","id":"c0ffee","Type":"container","Action":"oom",)"
    R"("Actor":{"ID":"c0ffee","Attributes":{"name":"sandshim-r1","image":"x"}},)"
    R"("time":1700000000,"timeNano":1700000000123456789})";

}  // namespace

TEST_CASE("a verb sends its method and target and reads the engine's JSON", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, answers(http::status::ok, R"({"Id":"sha256:abc","Size":1})"));
  auto reply = ApiClient(engine.path()).inspect_image("sandshim/python:bookworm");
  CHECK(reply.ok());
  CHECK(sandshim::engine::image_id(reply) == "sha256:abc");
  CHECK(engine.targets() == std::vector<std::string>{"/images/sandshim/python:bookworm/json"});
}

TEST_CASE("query values are escaped, label filters are JSON", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, answers(http::status::ok, R"([{"Id":"a1"},{"Id":"b2"},{"Names":[]}])"));
  auto reply = ApiClient(engine.path()).list_by_label("org.sandshim.run");
  CHECK(sandshim::engine::container_ids(reply) == std::vector<std::string>{"a1", "b2"});
  CHECK(engine.targets().front() ==
        "/containers/json?all=true&filters=%7B%22label%22%3A%5B%22org.sandshim.run%22%5D%7D");
}

TEST_CASE("the engine's refusal is an answer with its status and message", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, answers(http::status::not_found, R"({"message":"No such image: x"})"));
  auto reply = ApiClient(engine.path()).inspect_image("x");
  CHECK(reply.answered());
  CHECK_FALSE(reply.ok());
  CHECK(reply.status == 404);
  CHECK(reply.describe() == "HTTP 404: No such image: x");
  CHECK(sandshim::engine::image_id(reply).empty());
}

TEST_CASE("create, start, wait, kill and remove name their container", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(
      dir,
      [](Socket& socket, const Request& request, TestEngine&) {
        bool wait = request.target().find("/wait") != beast::string_view::npos;
        answer(socket, http::status::ok, wait ? R"({"StatusCode":42})" : R"({"Id":"c1"})");
      },
      5);
  ApiClient client(engine.path());
  CHECK(client.create("sandshim-r1", R"({"Image":"x"})").ok());
  CHECK(client.start("sandshim-r1").ok());
  CHECK(sandshim::engine::wait_status(client.wait("sandshim-r1", "removed", 1s)) == 42);
  CHECK(client.kill("sandshim-r1", "TERM").ok());
  CHECK(client.remove("sandshim-r1").ok());
  CHECK(engine.targets() ==
        std::vector<std::string>{"/containers/create?name=sandshim-r1",
                                 "/containers/sandshim-r1/start",
                                 "/containers/sandshim-r1/wait?condition=removed",
                                 "/containers/sandshim-r1/kill?signal=TERM",
                                 "/containers/sandshim-r1?force=true&v=true"});
}

TEST_CASE("no engine on the socket is unreachable, not an answer", "[engine_api]") {
  ScratchDir dir;
  auto reply = ApiClient(dir.path() / "nobody.sock").ping();
  CHECK(reply.fault == Fault::unreachable);
  CHECK_FALSE(reply.ok());
  CHECK(reply.status == 0);
}

TEST_CASE("an engine that accepts but never answers costs the timeout, not a hang",
          "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, [](Socket&, const Request&, TestEngine& self) { self.stall(); });
  auto reply = ApiClient(engine.path(), 200ms).version();
  CHECK(reply.fault == Fault::timeout);
}

TEST_CASE("an answer that stops mid-body is a timeout when the engine stays silent",
          "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, [](Socket& socket, const Request&, TestEngine& self) {
    write_raw(socket, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"Id\":");
    self.stall();
  });
  CHECK(ApiClient(engine.path(), 200ms).info().fault == Fault::timeout);
}

TEST_CASE("malformed answers are malformed, never parsed as an id", "[engine_api]") {
  ScratchDir dir;
  SECTION("not HTTP") {
    TestEngine engine(dir, writes("SSH-2.0-OpenSSH_9.2\r\n\r\n"));
    auto reply = ApiClient(engine.path()).inspect_image("x");
    CHECK(reply.fault == Fault::malformed);
    CHECK(sandshim::engine::image_id(reply).empty());
  }
  SECTION("closed mid-body") {
    TestEngine engine(dir, writes("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"Id\":\"sha"));
    auto reply = ApiClient(engine.path()).inspect_image("x");
    CHECK(reply.fault == Fault::malformed);
    CHECK(reply.detail == "the engine closed the connection mid-answer");
  }
  SECTION("a 200 whose body is not the JSON asked for") {
    TestEngine engine(dir, answers(http::status::ok, R"(["Id","sha256:abc"])"));
    CHECK(sandshim::engine::image_id(ApiClient(engine.path()).inspect_image("x")).empty());
  }
  SECTION("a body past the limit") {
    TestEngine engine(dir, writes("HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n{"));
    auto reply = ApiClient(engine.path()).info();
    CHECK_FALSE(reply.answered());  // too large, or cut off: never a body to read
    CHECK(sandshim::engine::image_id(reply).empty());
  }
}

TEST_CASE("the event filter becomes the engine's filters and since", "[engine_api]") {
  EventFilter filter;
  filter.containers = {"sandshim-r1"};
  filter.actions = {"oom", "destroy"};
  filter.since_s = 1700000000;
  CHECK(sandshim::engine::events_target(filter) ==
        "/events?filters=%7B%22container%22%3A%5B%22sandshim-r1%22%5D%2C%22event%22%3A%5B%22oom%"
        "22%2C%22destroy%22%5D%2C%22type%22%3A%5B%22container%22%5D%7D&since=1700000000");
}

TEST_CASE("an event line is read into its action, actor and attributes", "[engine_api]") {
  auto event = sandshim::engine::parse_event(k_oom_event);
  REQUIRE(event);
  CHECK(event->action == "oom");
  CHECK(event->type == "container");
  CHECK(event->id == "c0ffee");
  CHECK(event->name() == "sandshim-r1");
  CHECK(event->time_ns == 1700000000123456789);
  CHECK_FALSE(sandshim::engine::parse_event("{\"Type\":\"container\"}"));
  CHECK_FALSE(sandshim::engine::parse_event("oom"));
}

TEST_CASE("events arrive through the poll loop, split anywhere across chunks", "[engine_api]") {
  ScratchDir dir;
  std::string line = std::string(k_oom_event) + "\n";
  TestEngine engine(dir, [&](Socket& socket, const Request&, TestEngine& self) {
    write_raw(socket,
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
              "Transfer-Encoding: chunked\r\n\r\n");
    write_raw(socket, chunk(line.substr(0, 30)));
    std::this_thread::sleep_for(20ms);
    write_raw(socket, chunk(line.substr(30) + line.substr(0, 10)));
    write_raw(socket, chunk(line.substr(10)) + "0\r\n\r\n");
    self.stall();
  });
  auto stream = ApiClient(engine.path()).events(EventFilter{});
  REQUIRE(stream.await_confirmation(5s));
  auto events = read_events(stream, 2);
  REQUIRE(events.size() == 2);
  CHECK(events[0].action == "oom");
  CHECK(events[1].name() == "sandshim-r1");
  CHECK(read_events(stream, 1).empty());
  CHECK(stream.ended());
}

TEST_CASE("read_available never blocks on a quiet stream", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, [](Socket& socket, const Request&, TestEngine& self) {
    write_raw(socket, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    self.stall();
  });
  auto stream = ApiClient(engine.path()).events(EventFilter{});
  CHECK(stream.subscribed());
  CHECK(stream.read_available().empty());
  REQUIRE(stream.await_confirmation(5s));
  CHECK(stream.read_available().empty());
  CHECK_FALSE(stream.ended());
}

TEST_CASE("a refused, silent or absent engine gives no events", "[engine_api]") {
  ScratchDir dir;
  SECTION("refused") {
    TestEngine engine(dir, answers(http::status::bad_request, R"({"message":"bad filter"})"));
    auto stream = ApiClient(engine.path()).events(EventFilter{});
    CHECK_FALSE(stream.await_confirmation(5s));
    CHECK_FALSE(stream.subscribed());
    CHECK(stream.ended());
    CHECK(stream.reply().describe() == "HTTP 400: bad filter");
  }
  SECTION("silent") {
    TestEngine engine(dir, [](Socket&, const Request&, TestEngine& self) { self.stall(); });
    auto stream = ApiClient(engine.path()).events(EventFilter{});
    CHECK(stream.subscribed());  // sent: subscribing never waits for the engine
    CHECK_FALSE(stream.await_confirmation(200ms));
    CHECK(stream.reply().fault == Fault::timeout);
  }
  SECTION("no engine") {
    auto stream = ApiClient(dir.path() / "nobody.sock").events(EventFilter{});
    CHECK_FALSE(stream.subscribed());
    CHECK(stream.reply().fault == Fault::unreachable);
  }
}

TEST_CASE("the frame decoder splits docker's multiplexed stream by channel", "[engine_api]") {
  std::string bytes = frame(Channel::stdout_channel, "out\n") +
                      frame(Channel::stderr_channel, "err\n") +
                      frame(Channel::stdout_channel, "more");
  for (size_t step : {bytes.size(), size_t{1}, size_t{3}, size_t{9}}) {
    FrameDecoder decoder(false);
    std::vector<Output> out;
    for (size_t at = 0; at < bytes.size(); at += step) {
      decoder.feed(std::string_view(bytes).substr(at, step), out);
    }
    REQUIRE(out.size() == 3);
    CHECK(out[0].channel == Channel::stdout_channel);
    CHECK(out[0].data == "out\n");
    CHECK(out[1].channel == Channel::stderr_channel);
    CHECK(out[1].data == "err\n");
    CHECK(out[2].data == "more");
    CHECK_FALSE(decoder.mid_frame());
  }
}

TEST_CASE("a frame header that is not docker's stops the decoder", "[engine_api]") {
  FrameDecoder decoder(false);
  std::vector<Output> out;
  decoder.feed(std::string("\x07\0\0\0\0\0\0\x01x", 9), out);
  CHECK(decoder.malformed());
  CHECK(out.empty());
  FrameDecoder tty(true);
  tty.feed(std::string("\x07\0\0\0", 4), out);
  CHECK_FALSE(tty.malformed());
  REQUIRE(out.size() == 1);
  CHECK(out[0].data.size() == 4);
}

TEST_CASE("attach switches protocols, relays stdin and demultiplexes output", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, [](Socket& socket, const Request& request, TestEngine&) {
    REQUIRE(request[http::field::upgrade] == "tcp");
    write_raw(socket,
              "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
              "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" +
                  frame(Channel::stdout_channel, "ready\n"));
    std::string input(5, '\0');
    net::read(socket, net::buffer(input));
    write_raw(socket, frame(Channel::stderr_channel, "got " + input));
  });
  auto stream = ApiClient(engine.path()).attach("sandshim-r1", false);
  REQUIRE(stream.attached());
  CHECK(stream.write_some("hello") == 5);
  stream.close_stdin();
  std::vector<Output> out;
  while (!stream.ended() && wait_readable(stream.fd())) {
    for (auto& chunk_out : stream.read_available()) {
      out.push_back(std::move(chunk_out));
    }
  }
  REQUIRE(out.size() == 2);
  CHECK(out[0].data == "ready\n");
  CHECK(out[1].channel == Channel::stderr_channel);
  CHECK(out[1].data == "got hello");
  CHECK(engine.targets().front() ==
        "/containers/sandshim-r1/attach?stream=1&stdin=1&stdout=1&stderr=1");
}

TEST_CASE("attach to a container the engine does not know is its 404", "[engine_api]") {
  ScratchDir dir;
  TestEngine engine(dir, answers(http::status::not_found, R"({"message":"No such container: c"})"));
  auto stream = ApiClient(engine.path()).attach("c", true);
  CHECK_FALSE(stream.attached());
  CHECK(stream.reply().describe() == "HTTP 404: No such container: c");
}

TEST_CASE("only unix:// and the default endpoint are local", "[engine_api]") {
  using sandshim::engine::api_socket;
  using sandshim::engine::is_local_endpoint;
  CHECK(is_local_endpoint(""));
  CHECK(is_local_endpoint("unix:///run/user/1000/docker.sock"));
  CHECK_FALSE(is_local_endpoint("ssh://me@builder"));
  CHECK_FALSE(is_local_endpoint("tcp://builder:2376"));
  CHECK(api_socket("docker", "", false, "") == std::filesystem::path("/var/run/docker.sock"));
  CHECK(api_socket("podman", "", false, "") == std::filesystem::path("/run/podman/podman.sock"));
  CHECK(api_socket("podman", "", true, "/run/user/1000") ==
        std::filesystem::path("/run/user/1000/podman/podman.sock"));
  CHECK_FALSE(api_socket("podman", "", true, ""));
  CHECK(api_socket("podman", "unix:///tmp/p.sock", true, "") ==
        std::filesystem::path("/tmp/p.sock"));
  CHECK_FALSE(api_socket("docker", "ssh://me@builder", false, ""));
}

TEST_CASE("a tcp:// endpoint with certificates is a TLS transport; plain TCP is none",
          "[engine_api]") {
  using sandshim::engine::tls_endpoint;
  using sandshim::engine::TlsEndpoint;
  CHECK(tls_endpoint("tcp://10.0.0.2:2376", "/certs") == TlsEndpoint{"10.0.0.2", "2376", "/certs"});
  CHECK(tls_endpoint("tcp://builder.example:2376/", "/c") ==
        TlsEndpoint{"builder.example", "2376", "/c"});
  CHECK_FALSE(tls_endpoint("tcp://10.0.0.2:2376", ""));
  CHECK_FALSE(tls_endpoint("tcp://10.0.0.2", "/certs"));
  CHECK_FALSE(tls_endpoint("tcp://10.0.0.2:x", "/certs"));
  CHECK_FALSE(tls_endpoint("ssh://me@builder", "/certs"));
  CHECK(sandshim::engine::describe(TlsEndpoint{"h", "2376", "/c"}) == "tcp://h:2376 (TLS)");
  CHECK(sandshim::engine::describe(std::filesystem::path("/run/d.sock")) == "unix:///run/d.sock");
}

TEST_CASE("TLS files that are missing are a fault naming the directory", "[engine_api]") {
  ScratchDir dir;
  auto reply = ApiClient(sandshim::engine::TlsEndpoint{"127.0.0.1", "9", dir.path()}, 500ms).ping();
  CHECK(reply.fault == Fault::unreachable);
  CHECK_THAT(reply.detail, Catch::Contains(dir.path().string()));
}
