#pragma once

// A stand-in engine for the engine client's unit tests: a Beast server on a unix socket in the
// test's temporary directory, whose answers each test writes by hand (well-formed, refused,
// malformed, slow, streamed).

#include <atomic>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/attach_stream.hpp"
#include "test_shim_support.hpp"

namespace sandshim::test {

namespace engine_server {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Socket = net::local::stream_protocol::socket;
using Request = http::request<http::string_body>;

// A stand-in engine: serves `connections` connections one after the other, each read as one
// HTTP request handed to the test's handler, which writes whatever answer the test needs.
class TestEngine {
 public:
  using Handler = std::function<void(Socket&, const Request&, TestEngine&)>;

  TestEngine(const ScratchDir& dir, Handler handler, int connections = 1)
      : m_path(dir.path() / "engine.sock"),
        m_acceptor(m_io, net::local::stream_protocol::endpoint(m_path.string())),
        m_thread(
            [this, handler = std::move(handler), connections] { serve(handler, connections); }) {}
  TestEngine(const TestEngine&) = delete;
  TestEngine& operator=(const TestEngine&) = delete;
  ~TestEngine() {
    m_stop = true;
    m_thread.join();
  }

  const std::filesystem::path& path() const { return m_path; }
  bool stopping() const { return m_stop; }
  std::vector<std::string> targets() {
    std::lock_guard lock(m_mutex);
    return m_targets;
  }
  // Holds the connection open without answering until the test ends (a paused engine).
  void stall() {
    while (!m_stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  void serve(const Handler& handler, int connections) {
    for (int i = 0; i < connections; ++i) {
      Socket socket(m_io);
      m_acceptor.accept(socket);
      beast::flat_buffer buffer;
      Request request;
      beast::error_code error;
      http::read(socket, buffer, request, error);
      {
        std::lock_guard lock(m_mutex);
        m_targets.push_back(std::string(request.target()));
      }
      try {
        handler(socket, request, *this);
      } catch (const boost::system::system_error&) {
        // The client hung up mid-answer, having read what it needed (an OOM watch that decided
        // before the stream's last event): the test judges the client, not this write.
      }
    }
  }

  std::filesystem::path m_path;
  net::io_context m_io;
  net::local::stream_protocol::acceptor m_acceptor;
  std::atomic<bool> m_stop = false;
  std::mutex m_mutex;
  std::vector<std::string> m_targets;
  std::thread m_thread;
};

inline void answer(Socket& socket, http::status status, const std::string& body) {
  http::response<http::string_body> response{status, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = body;
  response.prepare_payload();
  http::write(socket, response);
}

inline TestEngine::Handler answers(http::status status, std::string body) {
  return
      [status, body](Socket& socket, const Request&, TestEngine&) { answer(socket, status, body); };
}

inline TestEngine::Handler writes(std::string raw) {
  return
      [raw](Socket& socket, const Request&, TestEngine&) { net::write(socket, net::buffer(raw)); };
}

inline void write_raw(Socket& socket, const std::string& bytes) {
  net::write(socket, net::buffer(bytes));
}

inline std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

inline std::string frame(engine::Channel channel, const std::string& payload) {
  std::string header(8, '\0');
  header[0] = static_cast<char>(channel);
  auto n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) {
    header[static_cast<size_t>(7 - i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  }
  return header + payload;
}

}  // namespace engine_server

}  // namespace sandshim::test
