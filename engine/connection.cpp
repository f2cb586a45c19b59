#include "engine/connection.hpp"

#include "engine/ssh_connect.hpp"
#include "engine/tls_connect.hpp"

#include <boost/asio/error.hpp>
#include <cctype>
#include <cstring>

namespace sandshim::engine::detail {

namespace {

Fault fault_of(const beast::error_code& error) {
  if (error == beast::error::timeout || error == net::error::operation_aborted) {
    return Fault::timeout;
  }
  if (error == http::error::body_limit || error == http::error::header_limit ||
      error == http::error::buffer_overflow) {
    return Fault::too_large;
  }
  return Fault::malformed;
}

}  // namespace

bool Session::check(const beast::error_code& error) {
  if (!error || failed()) {
    return !failed();
  }
  fault = fault_of(error);
  detail = error == http::error::end_of_stream || error == http::error::partial_message ||
                   error == net::error::eof
               ? "the engine closed the connection mid-answer"
               : error.message();
  explain_ssh_failure();
  return false;
}

// ssh ends at once when it fails (and so the connection): a second is ample for its words.
void Session::explain_ssh_failure() {
  if (!ssh_diagnostics.valid() || !ssh ||
      (fault != Fault::malformed && fault != Fault::unreachable)) {
    return;
  }
  std::string line =
      ssh_failure(*ssh, read_diagnostics(ssh_diagnostics.get(), std::chrono::seconds(1)));
  ssh_diagnostics.reset();
  if (!line.empty()) {
    fault = Fault::unreachable;
    detail = line;
  }
}

void Session::run() {
  io.restart();
  io.run();
}

Request make_request(http::verb verb, const std::string& target, std::string body,
                     const std::string& content_type) {
  Request request{verb, target, 11};
  request.set(http::field::host, "docker");
  request.set(http::field::user_agent, "sandshim");
  if (!body.empty()) {
    request.set(http::field::content_type, content_type);
    request.body() = std::move(body);
  }
  request.prepare_payload();
  return request;
}

namespace {

// The session's stream on the local end of a TLS connection's relay (tls_connect.hpp).
beast::error_code connect_tls(Session& session, const TlsEndpoint& endpoint,
                              std::chrono::milliseconds timeout) {
  TlsConnection tls = detail::connect_tls(endpoint, std::chrono::steady_clock::now() + timeout);
  beast::error_code result;
  if (tls.fd < 0) {
    session.fault = tls.fault;
    session.detail = tls.detail;
    return net::error::not_connected;
  }
  session.stream.socket().assign(Protocol(), tls.fd, result);
  return result;
}

// The session's stream on the local end of an ssh connection (ssh_connect.hpp).
beast::error_code connect_ssh(Session& session, const SshEndpoint& endpoint,
                              std::chrono::milliseconds timeout) {
  SshConnection ssh = detail::connect_ssh(endpoint, timeout);
  beast::error_code result;
  if (ssh.fd < 0) {
    session.fault = ssh.fault;
    session.detail = ssh.detail;
    return net::error::not_connected;
  }
  session.ssh_diagnostics = UniqueFd(ssh.diagnostics);
  session.ssh = endpoint;
  session.stream.socket().assign(Protocol(), ssh.fd, result);
  return result;
}

// The connection to the engine: TLS through the relay for tcp://, ssh for ssh://, else its unix
// socket.
beast::error_code open_connection(Session& session, const Transport& transport,
                                  std::chrono::milliseconds timeout) {
  if (const auto* tls = std::get_if<TlsEndpoint>(&transport)) {
    return connect_tls(session, *tls, timeout);
  }
  if (const auto* ssh = std::get_if<SshEndpoint>(&transport)) {
    return connect_ssh(session, *ssh, timeout);
  }
  const auto& socket = std::get<std::filesystem::path>(transport);
  beast::error_code result;
  session.stream.async_connect(Protocol::endpoint(socket.string()),
                               [&](const beast::error_code& error) { result = error; });
  session.run();
  return result;
}

}  // namespace

bool connect_and_send(Session& session, const Transport& transport, Request& request,
                      std::chrono::milliseconds timeout) {
  session.stream.expires_after(timeout);
  beast::error_code result = open_connection(session, transport, timeout);
  if (is_remote(transport) && session.failed()) {
    return false;
  }
  if (result && result != beast::error::timeout) {
    session.fault = Fault::unreachable;
    session.detail = result.message();
    session.denied = result == boost::system::errc::permission_denied ||
                     result == boost::system::errc::operation_not_permitted;
    return false;
  }
  if (!session.check(result)) {
    return false;
  }
  http::async_write(session.stream, request,
                    [&](const beast::error_code& error, size_t) { result = error; });
  session.run();
  if (result && result != beast::error::timeout) {
    session.fault = Fault::unreachable;  // the engine hung up before reading the request
    session.detail = result.message();
    session.explain_ssh_failure();
    return false;
  }
  return session.check(result);
}

std::string url_escape(std::string_view text, const char* keep) {
  static const char* const k_hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || std::strchr("-._~", c) != nullptr ||
        (c != 0 && std::strchr(keep, c) != nullptr)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 15];
    }
  }
  return out;
}

}  // namespace sandshim::engine::detail
