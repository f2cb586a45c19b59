#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandshim::egress {

// One entry of network.allow: an exact name or `*.suffix`, on a port or on 443 and 80.
struct AllowRule {
  std::string pattern;           // "pypi.org" or "*.pythonhosted.org", lowercase
  std::optional<uint16_t> port;  // nullopt: 443 and 80
};

// Parses `NAME`, `*.SUFFIX`, `NAME:PORT`; an error text names what is wrong.
std::optional<std::string> parse_allow_rule(std::string_view text, AllowRule& rule);

// A port from 1 to 65535, written in decimal digits only.
std::optional<uint16_t> parse_port(std::string_view text);

// A lowercase host name without its trailing dot; empty when it is not a valid DNS name.
std::string normalize_name(std::string_view name);

// Whether `text` is an address (IPv4 in any form inet_aton reads, such as 127.1, or IPv6).
bool is_ip_literal(std::string_view text);

// Loopback, link-local, private, shared, unspecified, multicast or broadcast: never reached
// through the proxy unless a trusted network.resolve maps the exact name to the exact address.
bool is_restricted_address(std::string_view address);

// The rules of one run and the trusted name -> address mappings.
struct AllowList {
  std::vector<AllowRule> rules;
  std::map<std::string, std::string> resolve;  // network.resolve: name -> address

  // Whether `name` (normalized) may be reached on `port`.
  bool allows(const std::string& name, uint16_t port) const;
  // Whether every name and port `other` allows, this one allows too (a workspace may only shrink).
  bool covers(const AllowList& other) const;
  bool covers(const AllowRule& rule) const;
};

// Each word of a network.allow value parsed, or the first error.
std::optional<std::string> parse_allow_rules(std::string_view text, std::vector<AllowRule>& rules);
// `name=address` words of network.resolve, or the first error.
std::optional<std::string> parse_resolve_entries(std::string_view text,
                                                 std::map<std::string, std::string>& entries);
// The rule as it is written in a config file.
std::string to_string(const AllowRule& rule);

}  // namespace sandshim::egress
