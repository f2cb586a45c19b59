#pragma once

// Internal to engine/: the Beast plumbing every verb shares. Each call owns an io_context and
// runs one asynchronous operation at a time on it, so one deadline bounds the whole exchange
// (connect, request, answer) and a paused engine costs at most that long.

#include <algorithm>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"
#include "engine/reply.hpp"
#include "engine/transport.hpp"

namespace sandshim::engine::detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Protocol = net::local::stream_protocol;
using Stream = beast::basic_stream<Protocol>;
using Request = http::request<http::string_body>;

// One connection to the engine's socket and what happened on it.
struct Session {
  net::io_context io;
  Stream stream{io};
  beast::flat_buffer buffer;
  Fault fault = Fault::none;
  std::string detail;
  bool denied = false;  // the connect was refused for this process (Reply::denied)
  // ssh://: the client's stderr, read once when the exchange fails, since it says why.
  UniqueFd ssh_diagnostics;
  std::optional<SshEndpoint> ssh;

  bool failed() const { return fault != Fault::none; }
  // Records why the last operation failed; false when it did.
  bool check(const beast::error_code& error);
  // Runs the operation just started until it completes or the deadline cancels it.
  void run();
  // A connection that ended or was refused through ssh: ssh's own words become the fault.
  void explain_ssh_failure();
};

// A request with the headers every call sends.
Request make_request(http::verb verb, const std::string& target, std::string body = {},
                     const std::string& content_type = "application/json");

// Connects over `transport` and sends `request`, both before `timeout` from now; false (and the
// session's fault) when either failed. Later reads on the session share the same deadline.
bool connect_and_send(Session& session, const Transport& transport, Request& request,
                      std::chrono::milliseconds timeout);

// Reads the answer's header into `parser` (under the session's deadline).
template <class Parser>
bool read_header(Session& session, Parser& parser) {
  beast::error_code result;
  http::async_read_header(session.stream, session.buffer, parser,
                          [&](const beast::error_code& error, size_t) { result = error; });
  session.run();
  return session.check(result);
}

// Reads the whole answer into `parser` (under the session's deadline).
template <class Parser>
bool read_message(Session& session, Parser& parser) {
  beast::error_code result;
  http::async_read(session.stream, session.buffer, parser,
                   [&](const beast::error_code& error, size_t) { result = error; });
  session.run();
  return session.check(result);
}

// The reply of a finished exchange: the parser's status and body, or the session's fault.
template <class Parser>
Reply reply_of(const Session& session, Parser& parser) {
  Reply reply;
  reply.fault = session.fault;
  reply.detail = session.detail;
  reply.denied = session.denied;
  if (!session.failed()) {
    reply.status = parser.get().result_int();
    reply.body = parser.get().body();
  }
  return reply;
}

// Opens a streaming call: sends `request` and reads the answer's header. A status in
// `streaming` leaves the session's socket non-blocking for the caller's poll loop (bytes already
// read stay in the session's buffer); any other status reads the body too, for the reply.
template <class Parser>
Reply open_stream(Session& session, const Transport& transport, Request& request,
                  std::chrono::milliseconds timeout, Parser& parser,
                  std::initializer_list<unsigned> streaming) {
  if (connect_and_send(session, transport, request, timeout) && read_header(session, parser)) {
    unsigned status = parser.get().result_int();
    if (std::find(streaming.begin(), streaming.end(), status) != streaming.end()) {
      session.stream.expires_never();
      beast::error_code error;
      session.stream.socket().non_blocking(true, error);
      return session.check(error) ? Reply{status, "", Fault::none, ""} : reply_of(session, parser);
    }
    read_message(session, parser);
  }
  return reply_of(session, parser);
}

// Text escaped for a URL: query values (JSON filters, names) escape everything but unreserved
// characters; path segments that are image references keep `/:@` (the engine routes on them).
std::string url_escape(std::string_view text, const char* keep = "");

}  // namespace sandshim::engine::detail
