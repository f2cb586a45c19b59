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
// proxy request sandshim serves (SOCKS, origin-form, a malformed line).
std::optional<ProxyRequest> parse_proxy_request(std::string_view head, std::string& error);

// The proxy's refusal as HTTP: status 403 (or 400), a reason phrase and a body that both name
// network.allow, so curl, urllib and pip print why.
std::string refusal_response(const std::string& reason, int status = 403);

}  // namespace sandshim::egress
