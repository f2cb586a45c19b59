#include "egress/allowlist.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "common/strings.hpp"

namespace sandshim::egress {

namespace {

constexpr std::array<uint16_t, 2> k_default_ports = {443, 80};

bool valid_label(std::string_view label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
    return false;
  }
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  size_t begin = 0;
  while (begin <= name.size()) {
    size_t end = std::min(name.find('.', begin), name.size());
    if (!valid_label(name.substr(begin, end - begin))) {
      return false;
    }
    begin = end + 1;
  }
  return true;
}

bool name_matches(const std::string& pattern, const std::string& name) {
  if (pattern.starts_with("*.")) {
    std::string_view suffix = std::string_view(pattern).substr(1);  // ".example.com"
    return name.size() > suffix.size() && name.ends_with(suffix);
  }
  return pattern == name;
}

bool port_matches(const AllowRule& rule, uint16_t port) {
  if (rule.port) {
    return *rule.port == port;
  }
  return std::find(k_default_ports.begin(), k_default_ports.end(), port) != k_default_ports.end();
}

// Whether `outer` matches every name `inner` matches.
bool pattern_covers(const std::string& outer, const std::string& inner) {
  if (inner.starts_with("*.")) {
    return outer.starts_with("*.") && (inner == outer || inner.ends_with(outer.substr(1)));
  }
  return name_matches(outer, inner);
}

bool restricted_v4(uint32_t host_order) {
  auto in = [host_order](uint32_t net, int bits) {
    uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
    return (host_order & mask) == net;
  };
  return in(0x00000000, 8) || in(0x0a000000, 8) || in(0x7f000000, 8) || in(0x64400000, 10) ||
         in(0xa9fe0000, 16) || in(0xac100000, 12) || in(0xc0000000, 24) || in(0xc0a80000, 16) ||
         in(0xc6120000, 15) || in(0xe0000000, 4) || in(0xf0000000, 4);
}

bool restricted_v6(const in6_addr& address) {
  const uint8_t* b = address.s6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&address) || IN6_IS_ADDR_V4COMPAT(&address)) {
    uint32_t v4 = 0;
    std::memcpy(&v4, b + 12, 4);
    return restricted_v4(ntohl(v4));
  }
  return IN6_IS_ADDR_UNSPECIFIED(&address) || IN6_IS_ADDR_LOOPBACK(&address) ||
         IN6_IS_ADDR_LINKLOCAL(&address) || IN6_IS_ADDR_SITELOCAL(&address) ||
         IN6_IS_ADDR_MULTICAST(&address) || (b[0] & 0xfe) == 0xfc ||        // unique local fc00::/7
         (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) ||  // documentation
         (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b);    // NAT64 64:ff9b::/96
}

}  // namespace

std::optional<uint16_t> parse_port(std::string_view text) {
  unsigned value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

std::string normalize_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  if (!lower.empty() && lower.back() == '.') {
    lower.pop_back();
  }
  return valid_name(lower) && !is_ip_literal(lower) ? lower : std::string();
}

bool is_ip_literal(std::string_view text) {
  std::string s(text);
  if (s.size() > 2 && s.front() == '[' && s.back() == ']') {
    s = s.substr(1, s.size() - 2);
  }
  in_addr v4{};
  in6_addr v6{};
  return ::inet_aton(s.c_str(), &v4) != 0 || ::inet_pton(AF_INET6, s.c_str(), &v6) == 1;
}

bool is_restricted_address(std::string_view address) {
  std::string s(address);
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    return restricted_v4(ntohl(v4.s_addr));
  }
  if (::inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    return restricted_v6(v6);
  }
  return true;  // not an address we can classify: refused
}

std::optional<std::string> parse_allow_rule(std::string_view text, AllowRule& rule) {
  std::string word = trim(text);
  rule = AllowRule{};
  if (size_t colon = word.rfind(':'); colon != std::string::npos) {
    rule.port = parse_port(std::string_view(word).substr(colon + 1));
    if (!rule.port) {
      return "bad port in " + quoted(word) + ": expected NAME:PORT with a port from 1 to 65535";
    }
    word.resize(colon);
  }
  bool wildcard = word.starts_with("*.");
  std::string name = normalize_name(wildcard ? std::string_view(word).substr(2) : word);
  if (name.empty()) {
    return quoted(word) + " is not a host name (expected NAME, *.SUFFIX or NAME:PORT; " +
           "IP addresses are never allowed)";
  }
  rule.pattern = wildcard ? "*." + name : name;
  return std::nullopt;
}

std::optional<std::string> parse_allow_rules(std::string_view text, std::vector<AllowRule>& rules) {
  std::string list(text);
  std::replace(list.begin(), list.end(), ',', ' ');
  rules.clear();
  for (const auto& word : split_words(list)) {
    AllowRule rule;
    if (auto error = parse_allow_rule(word, rule)) {
      return error;
    }
    rules.push_back(rule);
  }
  return std::nullopt;
}

std::optional<std::string> parse_resolve_entries(std::string_view text,
                                                 std::map<std::string, std::string>& entries) {
  std::string list(text);
  std::replace(list.begin(), list.end(), ',', ' ');
  entries.clear();
  for (const auto& word : split_words(list)) {
    size_t equals = word.find('=');
    std::string name = normalize_name(word.substr(0, std::min(equals, word.size())));
    std::string address = equals == std::string::npos ? "" : word.substr(equals + 1);
    in_addr v4{};
    in6_addr v6{};
    if (name.empty() || (::inet_pton(AF_INET, address.c_str(), &v4) != 1 &&
                         ::inet_pton(AF_INET6, address.c_str(), &v6) != 1)) {
      return "expected NAME=ADDRESS such as test.example=127.0.0.1, not " + quoted(word);
    }
    entries[name] = address;
  }
  return std::nullopt;
}

std::string to_string(const AllowRule& rule) {
  return rule.port ? rule.pattern + ":" + std::to_string(*rule.port) : rule.pattern;
}

bool AllowList::allows(const std::string& name, uint16_t port) const {
  return std::any_of(rules.begin(), rules.end(), [&](const AllowRule& rule) {
    return name_matches(rule.pattern, name) && port_matches(rule, port);
  });
}

bool AllowList::covers(const AllowRule& rule) const {
  std::vector<uint16_t> ports;
  if (rule.port) {
    ports.push_back(*rule.port);
  } else {
    ports.assign(k_default_ports.begin(), k_default_ports.end());
  }
  return std::all_of(ports.begin(), ports.end(), [&](uint16_t port) {
    return std::any_of(rules.begin(), rules.end(), [&](const AllowRule& mine) {
      return pattern_covers(mine.pattern, rule.pattern) && port_matches(mine, port);
    });
  });
}

bool AllowList::covers(const AllowList& other) const {
  return std::all_of(other.rules.begin(), other.rules.end(),
                     [&](const AllowRule& rule) { return covers(rule); });
}

}  // namespace sandshim::egress
