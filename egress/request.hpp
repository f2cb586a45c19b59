#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim::egress {

// What a client asked the proxy for: a tunnel (CONNECT host:port) or one plain HTTP request
// with an absolute URI, rewritten to origin form for the upstream server.
struct ProxyRequest {
  bool tunnel = false;
  std::string host;  // as the client wrote it, without brackets
  uint16_t port = 0;
  std::string upstream_head;  // plain HTTP: the head to send upstream (Connection: close)
};

// Parses a request head (through the blank line); nullopt with `error` set when it is not a
// proxy request sandshim serves (origin-form, a malformed line; SOCKS5 has its own parser).
std::optional<ProxyRequest> parse_proxy_request(std::string_view head, std::string& error);

// The proxy's refusal as HTTP: status 403 (or 400), a reason phrase and a body that both name
// network.allow, so curl, urllib and pip print why.
std::string refusal_response(const std::string& reason, int status = 403);

// SOCKS5 (RFC 1928), the CONNECT of programs that speak no HTTP proxy: no authentication, the
// CONNECT command only. How far the client's next message has arrived.
enum class SocksParse { incomplete, complete, invalid };

// The reply codes sandshim sends (RFC 1928, 6).
inline constexpr uint8_t k_socks_version = 5;
inline constexpr uint8_t k_socks_succeeded = 0;
inline constexpr uint8_t k_socks_failure = 1;
inline constexpr uint8_t k_socks_not_allowed = 2;
inline constexpr uint8_t k_socks_refused = 5;
inline constexpr uint8_t k_socks_command_unsupported = 7;
inline constexpr uint8_t k_socks_address_unsupported = 8;

// The greeting: its length once complete, and whether it offers "no authentication".
struct SocksGreeting {
  SocksParse state = SocksParse::incomplete;
  size_t size = 0;
  bool no_auth = false;
};

// The CONNECT request as a tunnel request; an IPv4 or IPv6 destination comes out as its text,
// so the proxy refuses it exactly as it refuses an IP literal in HTTP CONNECT. When invalid,
// `reply` is the code to answer with and `error` says why.
struct SocksRequest {
  SocksParse state = SocksParse::incomplete;
  size_t size = 0;
  ProxyRequest request;
  uint8_t reply = k_socks_failure;
  std::string error;
};

// Reads the client's first message (VER NMETHODS METHODS...) from the bytes received so far.
SocksGreeting parse_socks_greeting(std::string_view bytes);

// Reads the request that follows the greeting (VER CMD RSV ATYP DST.ADDR DST.PORT).
SocksRequest parse_socks_request(std::string_view bytes);

// The server's reply to a request: CODE, and an unspecified bound address (clients ignore it).
std::string socks_reply(uint8_t code);

}  // namespace sandshim::egress
