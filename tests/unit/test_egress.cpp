#include <catch2/catch.hpp>

#include "egress/allowlist.hpp"
#include "egress/proxy.hpp"
#include "egress/request.hpp"
#include "policy/policy.hpp"
#include "run/egress_session.hpp"
#include "run/hardening.hpp"
#include "test_shim_support.hpp"

using namespace sandshim;
using namespace sandshim::egress;

namespace {

AllowList list_of(const std::string& text) {
  AllowList list;
  REQUIRE_FALSE(parse_allow_rules(text, list.rules).has_value());
  return list;
}

std::string workspace_error(shim::Policy& policy, const std::string& key,
                            const std::string& value) {
  try {
    shim::apply_settings(policy, {{key, value, {".sandshim.conf", 1}}}, shim::Trust::tighten_only);
  } catch (const Fatal& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("network.allow rules: exact names, *.suffix and ports", "[egress]") {
  AllowList list = list_of("PyPI.org. *.pythonhosted.org registry.example:8443");
  CHECK(list.allows("pypi.org", 443));
  CHECK(list.allows("pypi.org", 80));
  CHECK_FALSE(list.allows("pypi.org", 22));
  CHECK_FALSE(list.allows("evil-pypi.org", 443));
  CHECK(list.allows("files.pythonhosted.org", 443));
  CHECK(list.allows("a.b.pythonhosted.org", 80));
  CHECK_FALSE(list.allows("pythonhosted.org", 443));  // *.suffix names its subdomains only
  CHECK_FALSE(list.allows("xpythonhosted.org", 443));
  CHECK(list.allows("registry.example", 8443));
  CHECK_FALSE(list.allows("registry.example", 443));
}

TEST_CASE("network.allow refuses what is not a host name", "[egress]") {
  std::vector<AllowRule> rules;
  for (const char* bad : {"10.0.0.1", "127.1", "[::1]", "a..b", "-x.example", "x.example:0",
                          "x.example:70000", "*", "http://x.example", "x.example:http"}) {
    CAPTURE(bad);
    CHECK(parse_allow_rules(bad, rules).has_value());
  }
}

TEST_CASE("a list covers another only when it allows all of it", "[egress]") {
  AllowList wide = list_of("*.example.com pypi.org");
  CHECK(wide.covers(list_of("a.example.com *.b.example.com pypi.org:443")));
  CHECK(wide.covers(list_of("")));
  CHECK_FALSE(wide.covers(list_of("example.com")));
  CHECK_FALSE(wide.covers(list_of("pypi.org:8080")));
  CHECK_FALSE(wide.covers(list_of("*.org")));
  CHECK_FALSE(list_of("a.example.com").covers(list_of("*.example.com")));
}

TEST_CASE("IP literals and restricted addresses", "[egress]") {
  for (const char* literal :
       {"127.0.0.1", "127.1", "2130706433", "0x7f000001", "::1", "[::1]", "fe80::1"}) {
    CAPTURE(literal);
    CHECK(is_ip_literal(literal));
  }
  CHECK_FALSE(is_ip_literal("pypi.org"));
  for (const char* restricted : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1",
                                 "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1",
                                 "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"}) {
    CAPTURE(restricted);
    CHECK(is_restricted_address(restricted));
  }
  for (const char* open : {"151.101.0.223", "8.8.8.8", "2a04:4e42::223", "172.32.0.1"}) {
    CAPTURE(open);
    CHECK_FALSE(is_restricted_address(open));
  }
}

TEST_CASE("the proxy's decision names network.allow", "[egress]") {
  AllowList list = list_of("test.example:8080 public.example");
  list.resolve["test.example"] = "127.0.0.1";
  CHECK(check_name(list, "test.example", 8080).empty());
  CHECK_THAT(check_name(list, "test.example", 22), Catch::Contains("not in network.allow"));
  CHECK_THAT(check_name(list, "other.example", 443), Catch::Contains("not in network.allow"));
  CHECK_THAT(check_name(list, "127.0.0.1", 8080), Catch::Contains("network.allow"));
  CHECK_THAT(check_name(list, "127.0.0.1", 8080), Catch::Contains("never IP addresses"));
  std::vector<std::string> chosen;
  CHECK(check_addresses(list, "test.example", {"127.0.0.1"}, chosen).empty());
  CHECK(chosen == std::vector<std::string>{"127.0.0.1"});
  // Only the exact mapping is trusted: another loopback address of the same name is not.
  CHECK_THAT(check_addresses(list, "test.example", {"127.0.0.2"}, chosen),
             Catch::Contains("network.allow never reaches"));
  CHECK_THAT(check_addresses(list, "public.example", {"10.0.0.5"}, chosen),
             Catch::Contains("private"));
  CHECK(check_addresses(list, "public.example", {"10.0.0.5", "151.101.0.223"}, chosen).empty());
  CHECK(chosen == std::vector<std::string>{"151.101.0.223"});
}

TEST_CASE("proxy requests: CONNECT and absolute http URLs", "[egress]") {
  std::string error;
  auto tunnel =
      parse_proxy_request("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", error);
  REQUIRE(tunnel);
  CHECK(tunnel->tunnel);
  CHECK(tunnel->host == "pypi.org");
  CHECK(tunnel->port == 443);
  auto v6 = parse_proxy_request("CONNECT [::1]:22 HTTP/1.1\r\n\r\n", error);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  auto plain = parse_proxy_request(
      "GET http://Test.Example:8080/a/b?c=1 HTTP/1.1\r\nHost: test.example:8080\r\n"
      "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
      error);
  REQUIRE(plain);
  CHECK_FALSE(plain->tunnel);
  CHECK(plain->host == "Test.Example");
  CHECK(plain->port == 8080);
  CHECK(plain->upstream_head ==
        "GET /a/b?c=1 HTTP/1.1\r\nHost: test.example:8080\r\nAccept: */*\r\nConnection: "
        "close\r\n\r\n");
  auto default_port = parse_proxy_request("GET http://x.example HTTP/1.0\r\n\r\n", error);
  REQUIRE(default_port);
  CHECK(default_port->port == 80);
  CHECK(default_port->upstream_head.starts_with("GET / HTTP/1.0\r\n"));
  for (const char* bad : {"GET /origin-form HTTP/1.1\r\n\r\n", "CONNECT pypi.org HTTP/1.1\r\n\r\n",
                          "GET http://user:pw@x.example/ HTTP/1.1\r\n\r\n",
                          "GET ftp://x.example/ HTTP/1.1\r\n\r\n", "\x05\x01\x00"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_proxy_request(bad, error));
  }
}

TEST_CASE("SOCKS5: a greeting must offer no authentication", "[egress]") {
  CHECK(parse_socks_greeting("\x05").state == SocksParse::incomplete);
  CHECK(parse_socks_greeting(std::string("\x05\x02\x02", 3)).state == SocksParse::incomplete);
  auto offered =
      parse_socks_greeting(std::string("\x05\x02\x02\x00"
                                       "extra",
                                       9));
  CHECK(offered.state == SocksParse::complete);
  CHECK(offered.size == 4);
  CHECK(offered.no_auth);
  auto password_only = parse_socks_greeting("\x05\x01\x02");
  CHECK(password_only.state == SocksParse::complete);
  CHECK_FALSE(password_only.no_auth);
  CHECK(parse_socks_greeting(std::string("\x04\x01\x00", 3)).state == SocksParse::invalid);
  CHECK(parse_socks_greeting(std::string("\x05\x00", 2)).state == SocksParse::invalid);
}

TEST_CASE("SOCKS5: CONNECT to a name is a tunnel request; addresses come out as text", "[egress]") {
  std::string name_request("\x05\x01\x00\x03\x08pypi.org\x01\xbb", 15);
  for (size_t cut = 0; cut < name_request.size(); ++cut) {
    CAPTURE(cut);
    CHECK(parse_socks_request(name_request.substr(0, cut)).state == SocksParse::incomplete);
  }
  auto named = parse_socks_request(name_request + "TLS bytes");
  REQUIRE(named.state == SocksParse::complete);
  CHECK(named.size == name_request.size());
  CHECK(named.request.tunnel);
  CHECK(named.request.host == "pypi.org");
  CHECK(named.request.port == 443);
  auto v4 = parse_socks_request(std::string("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x16", 10));
  REQUIRE(v4.state == SocksParse::complete);
  CHECK(v4.request.host == "127.0.0.1");
  CHECK(is_ip_literal(v4.request.host));  // refused by check_name, as in HTTP CONNECT
  std::string v6("\x05\x01\x00\x04", 4);
  v6 += std::string(15, '\0') + "\x01" + std::string("\x00\x50", 2);
  auto parsed_v6 = parse_socks_request(v6);
  REQUIRE(parsed_v6.state == SocksParse::complete);
  CHECK(parsed_v6.request.host == "::1");
  CHECK(parsed_v6.request.port == 80);
}

TEST_CASE("SOCKS5: other commands, address types and empty names are refused", "[egress]") {
  auto bind = parse_socks_request(std::string("\x05\x02\x00\x03\x01x\x00\x50", 8));
  CHECK(bind.state == SocksParse::invalid);
  CHECK(bind.reply == k_socks_command_unsupported);
  auto unknown = parse_socks_request(std::string("\x05\x01\x00\x09", 4));
  CHECK(unknown.state == SocksParse::invalid);
  CHECK(unknown.reply == k_socks_address_unsupported);
  auto empty = parse_socks_request(std::string("\x05\x01\x00\x03\x00\x00\x50", 7));
  CHECK(empty.state == SocksParse::invalid);
  auto no_port = parse_socks_request(std::string("\x05\x01\x00\x03\x01x\x00\x00", 8));
  CHECK(no_port.state == SocksParse::invalid);
  CHECK(socks_reply(k_socks_not_allowed) == std::string("\x05\x02\x00\x01\0\0\0\0\0\0", 10));
}

TEST_CASE("a refusal is an HTTP 403 whose status line and body name the reason", "[egress]") {
  std::string response = refusal_response("x.example:443 is not in network.allow");
  CHECK(response.starts_with(
      "HTTP/1.1 403 Forbidden (sandshim: x.example:443 is not in network.allow)\r\n"));
  CHECK(response.ends_with("\r\n\r\nsandshim: x.example:443 is not in network.allow\n"));
}

TEST_CASE("connection records survive the trip from the proxy process", "[egress]") {
  ConnectionRecord record{1700000000123, "CONNECT",       "pypi.org", 443,  "151.101.0.223",
                          true,          "network.allow", 512,        4096, 37};
  ConnectionRecord back = decode_record(encode_record(record));
  CHECK(back.name == record.name);
  CHECK(back.port == 443);
  CHECK(back.address == record.address);
  CHECK(back.allowed);
  CHECK(back.bytes_down == 4096);
  CHECK(back.duration_ms == 37);
}

TEST_CASE("network.allow in a workspace file may only shrink the list", "[egress][policy]") {
  shim::Policy policy;
  shim::apply_settings(policy,
                       {{"sandbox.network", "allowlist", {"user", 1}},
                        {"network.allow", "*.example.com pypi.org", {"user", 2}}},
                       shim::Trust::full);
  CHECK(workspace_error(policy, "network.allow", "a.example.com").empty());
  CHECK(policy.network_allow == std::vector<std::string>{"a.example.com"});
  CHECK_THAT(workspace_error(policy, "network.allow", "pypi.org"), Catch::Contains("would loosen"));
  CHECK_THAT(workspace_error(policy, "network.allow", "+ b.example.com"),
             Catch::Contains("would loosen"));
  CHECK_THAT(workspace_error(policy, "network.resolve", "a.example.com=127.0.0.1"),
             Catch::Contains("workspace file"));
  CHECK_THAT(workspace_error(policy, "sandbox.network", "bridge"), Catch::Contains("would loosen"));
  CHECK(workspace_error(policy, "sandbox.network", "none").empty());
  shim::Policy closed;  // network = none: a workspace cannot open the allowlist
  CHECK_THAT(workspace_error(closed, "sandbox.network", "allowlist"),
             Catch::Contains("would loosen"));
}

TEST_CASE("`+ NAME` adds to the list above; network.resolve checks its pairs", "[egress][policy]") {
  shim::Policy policy;
  shim::apply_settings(policy,
                       {{"network.allow", "a.example", {"user", 1}},
                        {"network.allow", "+ b.example:8443", {"command line", 0}}},
                       shim::Trust::full);
  CHECK(policy.network_allow == std::vector<std::string>{"a.example", "b.example:8443"});
  CHECK_THROWS_WITH(shim::apply_settings(policy, {{"network.resolve", "a.example", {"user", 1}}},
                                         shim::Trust::full),
                    Catch::Contains("expected NAME=ADDRESS"));
  shim::apply_settings(policy, {{"network.resolve", "a.example=127.0.0.1", {"user", 1}}},
                       shim::Trust::full);
  CHECK(policy.network_resolve.at("a.example") == "127.0.0.1");
}

TEST_CASE("an allowlist run keeps --network=none and wraps the command in the forwarder",
          "[egress][hardening]") {
  shim::Policy policy;
  policy.network = shim::Network::allowlist;
  shim::RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.command = {"python3", "-c", "print(1)"};
  spec.cwd = "/w";
  spec.workspace = "/w";
  spec.image = "sandshim/python:bookworm";
  spec.user = "1000:1000";
  spec.env = {{"HTTPS_PROXY", "http://corp-proxy:3128"}, {"LANG", "C.UTF-8"}};
  spec.egress = shim::EgressMount{"/tmp/e/0123456789abcdef", "/opt/sandshim/sandshim-forward"};
  auto args = shim::build_run_arguments(policy, spec);
  CHECK(test::has(args, "--network=none"));
  CHECK(
      test::has(args, "--mount=type=bind,source=/tmp/e/0123456789abcdef,target=/sandshim-egress"));
  CHECK(test::has(
      args,
      "--mount=type=bind,source=/opt/sandshim/sandshim-forward,target=/sandshim-forward,readonly"));
  CHECK(test::has(args, "--env=HTTPS_PROXY=http://127.0.0.1:3128"));
  CHECK(test::has(args, "--env=https_proxy=http://127.0.0.1:3128"));
  CHECK(test::has(args, "--env=PIP_PROXY=http://127.0.0.1:3128"));
  CHECK(test::has(args, "--env=NO_PROXY=localhost,127.0.0.1,::1"));
  CHECK_FALSE(test::has(args, "--env=HTTPS_PROXY"));  // the caller's own proxy never passes
  CHECK(test::has(args, "--env=LANG"));
  size_t image_at = test::index_of(args, "sandshim/python:bookworm");
  std::vector<std::string> tail(args.begin() + static_cast<std::ptrdiff_t>(image_at) + 1,
                                args.end());
  CHECK(tail == std::vector<std::string>{"/sandshim-forward", "--listen", "127.0.0.1:3128", "--to",
                                         "/sandshim-egress/proxy.sock", "--", "python3", "-c",
                                         "print(1)"});
}
