// What a sandboxed program sends the egress proxy (HTTP CONNECT, an absolute http:// request, a
// SOCKS5 greeting and request): refused or parsed; what is parsed names a host and a port, and
// a SOCKS5 message parses the same from exactly its own bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/request.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;

namespace {

void check_http(std::string_view text) {
  std::string error;
  auto request = egress::parse_proxy_request(text, error);
  if (!request) {
    fuzz::require(!error.empty(), "a refused proxy request has no reason");
    return;
  }
  fuzz::require(!request->host.empty(), "a parsed proxy request has no host");
  fuzz::require(request->tunnel || request->upstream_head.ends_with("\r\n\r\n"),
                "a plain request's upstream head does not end the head");
}

void check_socks(std::string_view bytes) {
  auto greeting = egress::parse_socks_greeting(bytes);
  if (greeting.state == egress::SocksParse::complete) {
    fuzz::require(greeting.size <= bytes.size(), "a SOCKS5 greeting is longer than its input");
  }
  auto parsed = egress::parse_socks_request(bytes);
  if (parsed.state == egress::SocksParse::invalid) {
    fuzz::require(!parsed.error.empty(), "a refused SOCKS5 request has no reason");
    return;
  }
  if (parsed.state != egress::SocksParse::complete) {
    return;
  }
  fuzz::require(parsed.size <= bytes.size(), "a SOCKS5 request is longer than its input");
  fuzz::require(parsed.request.tunnel && !parsed.request.host.empty() && parsed.request.port != 0,
                "a parsed SOCKS5 request is not a tunnel to a host and port");
  auto again = egress::parse_socks_request(bytes.substr(0, parsed.size));
  fuzz::require(again.state == egress::SocksParse::complete &&
                    again.request.host == parsed.request.host &&
                    again.request.port == parsed.request.port,
                "a SOCKS5 request does not parse the same from its own bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_http(bytes);
  check_socks(bytes);
  return 0;
}
