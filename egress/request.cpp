#include "egress/request.hpp"

#include <algorithm>
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

}  // namespace

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
