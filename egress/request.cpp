#include "egress/request.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <vector>

#include "egress/allowlist.hpp"

namespace sandshim::egress {

namespace {

// "host:port", "[v6]:port" or, when `default_port` is set, "host".
bool split_authority(std::string_view authority, std::optional<uint16_t> default_port,
                     ProxyRequest& request) {
  std::string_view port_text;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    request.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) {
      return false;
    }
    port_text = rest.empty() ? "" : rest.substr(1);
  } else {
    size_t colon = authority.rfind(':');
    request.host = std::string(authority.substr(0, colon));
    port_text = colon == std::string_view::npos ? "" : authority.substr(colon + 1);
  }
  auto port = port_text.empty() ? default_port : parse_port(port_text);
  if (!port || request.host.empty()) {
    return false;
  }
  request.port = *port;
  return true;
}

std::vector<std::string_view> head_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  size_t begin = 0;
  while (begin < head.size()) {
    size_t end = head.find("\r\n", begin);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    if (end == begin) {
      break;  // the blank line ends the head
    }
    lines.push_back(head.substr(begin, end - begin));
    begin = end + 2;
  }
  return lines;
}

bool hop_by_hop(std::string_view line) {
  std::string name(line.substr(0, line.find(':')));
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return name == "connection" || name == "proxy-connection" || name == "proxy-authorization" ||
         name == "keep-alive";
}

// GET http://host[:port]/path HTTP/1.1 -> GET /path HTTP/1.1, one request per connection.
bool parse_absolute(std::string_view method, std::string_view target, std::string_view version,
                    const std::vector<std::string_view>& lines, ProxyRequest& request) {
  if (!target.starts_with("http://")) {
    return false;
  }
  std::string_view rest = target.substr(7);
  size_t slash = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos ||
      !split_authority(authority, uint16_t{80}, request)) {
    return false;
  }
  std::string path(rest.substr(slash));
  if (path.empty() || path.front() != '/') {
    path = "/" + path;
  }
  std::string head = std::string(method) + " " + path + " " + std::string(version) + "\r\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!hop_by_hop(lines[i])) {
      head += std::string(lines[i]) + "\r\n";
    }
  }
  request.upstream_head = head + "Connection: close\r\n\r\n";
  return true;
}

constexpr uint8_t k_socks_no_auth = 0;
constexpr uint8_t k_socks_connect = 1;
constexpr uint8_t k_socks_ipv4 = 1;
constexpr uint8_t k_socks_domain = 3;
constexpr uint8_t k_socks_ipv6 = 4;
constexpr size_t k_socks_request_fixed = 4;  // VER CMD RSV ATYP

uint8_t byte_at(std::string_view bytes, size_t i) {
  return static_cast<uint8_t>(bytes[i]);
}

SocksRequest invalid_socks(uint8_t reply, std::string error) {
  SocksRequest parsed;
  parsed.state = SocksParse::invalid;
  parsed.reply = reply;
  parsed.error = std::move(error);
  return parsed;
}

// The destination address as text: the name as sent, or an IP address formatted.
std::string socks_address(uint8_t type, std::string_view raw) {
  if (type == k_socks_domain) {
    return std::string(raw);
  }
  std::array<char, INET6_ADDRSTRLEN> text{};
  ::inet_ntop(type == k_socks_ipv4 ? AF_INET : AF_INET6, raw.data(), text.data(), text.size());
  return text.data();
}

// DST.ADDR's length for ATYP at bytes[3] (the domain's length byte included), or nullopt.
std::optional<size_t> socks_address_size(std::string_view bytes) {
  switch (byte_at(bytes, 3)) {
    case k_socks_ipv4:
      return 4;
    case k_socks_ipv6:
      return 16;
    case k_socks_domain:
      return bytes.size() > k_socks_request_fixed ? std::optional<size_t>(1 + byte_at(bytes, 4))
                                                  : std::optional<size_t>(1);
    default:
      return std::nullopt;
  }
}

// Anything but a SOCKS5 CONNECT gets the reply the protocol has for it.
std::optional<SocksRequest> refuse_command(std::string_view bytes) {
  if (byte_at(bytes, 0) != k_socks_version) {
    return invalid_socks(k_socks_failure, "not a SOCKS5 request");
  }
  if (byte_at(bytes, 1) != k_socks_connect) {
    return invalid_socks(k_socks_command_unsupported,
                         "a SOCKS5 command other than CONNECT (the proxy opens tunnels only)");
  }
  return std::nullopt;
}

// The tunnel a complete CONNECT asks for: its address (a domain name has a length byte before
// it) and the big-endian port after it.
ProxyRequest socks_destination(std::string_view bytes, size_t address_size) {
  bool domain = byte_at(bytes, 3) == k_socks_domain;
  std::string_view raw =
      bytes.substr(k_socks_request_fixed + (domain ? 1 : 0), address_size - (domain ? 1 : 0));
  size_t port_at = k_socks_request_fixed + address_size;
  ProxyRequest request;
  request.tunnel = true;
  request.host = socks_address(byte_at(bytes, 3), raw);
  request.port =
      static_cast<uint16_t>((byte_at(bytes, port_at) << 8) | byte_at(bytes, port_at + 1));
  return request;
}

}  // namespace

SocksGreeting parse_socks_greeting(std::string_view bytes) {
  SocksGreeting greeting;
  if (bytes.size() < 2) {
    return greeting;
  }
  if (byte_at(bytes, 0) != k_socks_version || byte_at(bytes, 1) == 0) {
    greeting.state = SocksParse::invalid;
    return greeting;
  }
  greeting.size = 2 + size_t{byte_at(bytes, 1)};
  if (bytes.size() < greeting.size) {
    return greeting;
  }
  std::string_view methods = bytes.substr(2, greeting.size - 2);
  greeting.no_auth = methods.find(static_cast<char>(k_socks_no_auth)) != std::string_view::npos;
  greeting.state = SocksParse::complete;
  return greeting;
}

SocksRequest parse_socks_request(std::string_view bytes) {
  if (bytes.size() < k_socks_request_fixed) {
    return {};
  }
  if (auto refused = refuse_command(bytes)) {
    return *refused;
  }
  auto address_size = socks_address_size(bytes);
  if (!address_size) {
    return invalid_socks(k_socks_address_unsupported, "a SOCKS5 address of unknown type");
  }
  SocksRequest parsed;
  parsed.size = k_socks_request_fixed + *address_size + 2;
  if (bytes.size() < parsed.size) {
    return parsed;
  }
  parsed.request = socks_destination(bytes, *address_size);
  if (parsed.request.host.empty() || parsed.request.port == 0) {
    return invalid_socks(k_socks_address_unsupported, "a SOCKS5 request without a name or port");
  }
  parsed.state = SocksParse::complete;
  return parsed;
}

std::string socks_reply(uint8_t code) {
  return std::string{
      static_cast<char>(k_socks_version), static_cast<char>(code), 0, 1, 0, 0, 0, 0, 0, 0};
}

std::optional<ProxyRequest> parse_proxy_request(std::string_view head, std::string& error) {
  auto lines = head_lines(head);
  std::string_view first = lines.empty() ? std::string_view() : lines.front();
  size_t sp1 = first.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : first.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || !first.substr(sp2 + 1).starts_with("HTTP/1.")) {
    error = "not an HTTP proxy request (the proxy takes CONNECT and http:// requests)";
    return std::nullopt;
  }
  std::string_view method = first.substr(0, sp1);
  std::string_view target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  ProxyRequest request;
  if (method == "CONNECT") {
    request.tunnel = true;
    if (split_authority(target, std::nullopt, request)) {
      return request;
    }
  } else if (parse_absolute(method, target, first.substr(sp2 + 1), lines, request)) {
    return request;
  }
  error = "cannot read the target of the request (expected CONNECT host:port or an http:// URL)";
  return std::nullopt;
}

std::string refusal_response(const std::string& reason, int status) {
  std::string body = "sandshim: " + reason + "\n";
  std::string phrase = status == 403 ? "Forbidden" : "Bad Request";
  // The reason phrase carries the line too: for CONNECT, clients print only the status line.
  std::string line = reason;
  std::replace_if(
      line.begin(), line.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return "HTTP/1.1 " + std::to_string(status) + " " + phrase + " (sandshim: " + line +
         ")\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace sandshim::egress
