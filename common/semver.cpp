#include "common/semver.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <vector>

#include "common/strings.hpp"

namespace sandshim {

namespace {

using Triple = std::array<long, 3>;

// A version of up to three numbers; a missing or wildcard part ends it (`20.x`: one given).
struct Partial {
  Triple parts{0, 0, 0};
  int given = 0;
};

// The versions from `low` up to, not including, `high` (none: no upper bound).
struct Interval {
  Triple low{0, 0, 0};
  std::optional<Triple> high;
};

bool is_wildcard(std::string_view part) {
  return part == "x" || part == "X" || part == "*";
}

std::optional<long> number_of(std::string_view part) {
  long value = 0;
  auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || error != std::errc{} || end != part.data() + part.size()) {
    return std::nullopt;  // also `0-beta.1` and `3+build`: tags are not read
  }
  return value;
}

std::optional<Partial> parse_partial(std::string_view text) {
  if (!text.empty() && (text[0] == 'v' || text[0] == 'V')) {
    text.remove_prefix(1);
  }
  Partial partial;
  bool wildcard = text.empty();
  for (int i = 0; i < 3 && !wildcard; ++i) {
    size_t dot = text.find('.');
    std::string_view part = text.substr(0, dot);
    if (is_wildcard(part)) {
      wildcard = true;
    } else if (std::optional<long> number = number_of(part)) {
      partial.parts.at(i) = *number;
      partial.given = i + 1;
    } else {
      return std::nullopt;
    }
    if (dot == std::string_view::npos) {
      return partial;
    }
    text.remove_prefix(dot + 1);
  }
  return wildcard && (text.empty() || is_wildcard(text)) ? std::optional(partial) : std::nullopt;
}

// The first version past everything `partial` names: 20 -> 21.0.0, 20.1 -> 20.2.0.
std::optional<Triple> past(const Partial& partial) {
  Triple next = partial.parts;
  if (partial.given == 0) {
    return std::nullopt;
  }
  next.at(partial.given - 1) += 1;
  for (int i = partial.given; i < 3; ++i) {
    next.at(i) = 0;
  }
  return next;
}

// ^1.2.3 -> <2.0.0, ^0.2.3 -> <0.3.0, ^0.0.3 -> <0.0.4: the leftmost non-zero part is kept.
Partial caret_span(const Partial& partial) {
  Partial span = partial;
  if (partial.given > 1 && partial.parts[0] == 0) {
    span.given = partial.given > 2 && partial.parts[1] == 0 ? 3 : 2;
  } else {
    span.given = std::min(partial.given, 1);
  }
  return span;
}

std::optional<Interval> comparator(std::string_view op, const Partial& p) {
  if (op.empty() || op == "=") {
    return Interval{p.parts, past(p)};
  }
  if (op == ">=") {
    return Interval{p.parts, std::nullopt};
  }
  if (op == ">" && p.given > 0) {
    return Interval{*past(p), std::nullopt};
  }
  if (op == "<" && p.given > 0) {
    return Interval{{0, 0, 0}, p.parts};
  }
  if (op == "<=") {
    return Interval{{0, 0, 0}, past(p)};
  }
  if (op == "^") {
    return Interval{p.parts, past(caret_span(p))};
  }
  if (op == "~") {
    Partial span = p;
    span.given = std::min(p.given, 2);
    return Interval{p.parts, past(span)};
  }
  return std::nullopt;
}

std::optional<Interval> parse_comparator(std::string_view token) {
  static constexpr std::array<std::string_view, 7> k_operators = {">=", "<=", ">", "<",
                                                                  "=",  "^",  "~"};
  std::string_view op;
  for (std::string_view candidate : k_operators) {
    if (token.starts_with(candidate)) {
      op = candidate;
      break;
    }
  }
  std::optional<Partial> version = parse_partial(token.substr(op.size()));
  return version ? comparator(op, *version) : std::nullopt;
}

// Operators written apart from their version (`>= 18`) rejoin it.
std::vector<std::string> comparator_tokens(std::string_view set) {
  auto is_operator = [](const std::string& word) {
    return word.find_first_not_of("<>=^~") == std::string::npos;
  };
  std::vector<std::string> tokens;
  for (const std::string& word : split_words(set)) {
    if (!tokens.empty() && is_operator(tokens.back())) {
      tokens.back() += word;
    } else {
      tokens.push_back(word);
    }
  }
  return tokens;
}

Interval intersect(Interval a, const Interval& b) {
  a.low = std::max(a.low, b.low);
  if (b.high && (!a.high || *b.high < *a.high)) {
    a.high = b.high;
  }
  return a;
}

// `18 - 20`: from 18.0.0 up to everything 20 names.
std::optional<Interval> hyphen_range(std::string_view set, size_t dash) {
  std::optional<Partial> from = parse_partial(trim(set.substr(0, dash)));
  std::optional<Partial> to = parse_partial(trim(set.substr(dash + 3)));
  if (!from || !to) {
    return std::nullopt;
  }
  return Interval{from->parts, past(*to)};
}

std::optional<Interval> parse_set(std::string_view set) {
  if (size_t dash = set.find(" - "); dash != std::string_view::npos) {
    return hyphen_range(set, dash);
  }
  Interval all;
  for (const std::string& token : comparator_tokens(set)) {
    std::optional<Interval> one = parse_comparator(token);
    if (!one) {
      return std::nullopt;
    }
    all = intersect(all, *one);
  }
  return all;
}

bool contains(const Interval& interval, const Triple& version) {
  return interval.low <= version && (!interval.high || version < *interval.high);
}

}  // namespace

std::optional<bool> version_satisfies(std::string_view version, std::string_view range) {
  std::optional<Partial> have = parse_partial(trim(version));
  if (!have || have->given == 0) {
    return std::nullopt;
  }
  bool any = false;
  size_t start = 0;
  while (start <= range.size()) {
    size_t bar = range.find("||", start);
    std::string_view set = range.substr(start, bar == std::string_view::npos ? bar : bar - start);
    std::optional<Interval> interval = parse_set(trim(set));
    if (!interval) {
      return std::nullopt;
    }
    any = any || contains(*interval, have->parts);
    if (bar == std::string_view::npos) {
      break;
    }
    start = bar + 2;
  }
  return any;
}

std::optional<int> lowest_major(std::string_view range) {
  for (int major = 0; major < 100; ++major) {
    for (const char* release : {".0.0", ".999.999"}) {
      std::optional<bool> admits = version_satisfies(std::to_string(major) + release, range);
      if (!admits) {
        return std::nullopt;
      }
      if (*admits) {
        return major;
      }
    }
  }
  return std::nullopt;
}

bool is_npm_package_name(std::string_view name) {
  auto valid_part = [](std::string_view part) {
    return !part.empty() && part.front() != '.' && part.front() != '_' &&
           std::all_of(part.begin(), part.end(), [](char c) {
             return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                    c == '_' || c == '~';
           });
  };
  if (name.size() > 214) {
    return false;
  }
  if (name.starts_with('@')) {
    size_t slash = name.find('/');
    return slash != std::string_view::npos && valid_part(name.substr(1, slash - 1)) &&
           valid_part(name.substr(slash + 1));
  }
  return valid_part(name);
}

}  // namespace sandshim
