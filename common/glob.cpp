#include "common/glob.hpp"

#include <cstddef>

namespace sandshim {

namespace {

// ASCII only, whatever the locale: patterns and names are compared byte by byte, and a
// locale's tolower is a library call per character.
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
char upper(char c) {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

char fold(char c, GlobCase letter_case) {
  return letter_case == GlobCase::sensitive ? c : lower(c);
}

// A bracket expression `[...]` starting at `at`: where it ends (one past `]`), or npos when it
// never closes (the `[` is then a literal).
size_t bracket_end(std::string_view pattern, size_t at) {
  size_t i = at + 1;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    ++i;
  }
  if (i < pattern.size() && pattern[i] == ']') {
    ++i;  // a leading `]` is a member
  }
  for (; i < pattern.size(); ++i) {
    if (pattern[i] == ']') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

bool in_range(char low, char high, char c, GlobCase letter_case) {
  auto between = [&](char x) { return low <= x && x <= high; };
  if (letter_case == GlobCase::sensitive) {
    return between(c);
  }
  return between(lower(c)) || between(upper(c));
}

// Whether `c` is a member of the bracket expression pattern[at, end).
bool bracket_matches(std::string_view pattern, size_t at, size_t end, char c,
                     GlobCase letter_case) {
  size_t i = at + 1;
  bool negated = pattern[i] == '!' || pattern[i] == '^';
  i += negated ? 1 : 0;
  bool member = false;
  for (; i + 1 < end; ++i) {
    char low = pattern[i];
    if (i + 2 < end - 1 && pattern[i + 1] == '-') {
      member = member || in_range(low, pattern[i + 2], c, letter_case);
      i += 2;
    } else {
      member = member || fold(low, letter_case) == fold(c, letter_case);
    }
  }
  return member != negated;
}

// Matches the single-character element at pattern[p] against `c`; sets `next` past it.
bool element_matches(std::string_view pattern, size_t p, char c, GlobCase letter_case,
                     size_t& next) {
  char e = pattern[p];
  if (e == '?') {
    next = p + 1;
    return true;
  }
  if (e == '[') {
    size_t end = bracket_end(pattern, p);
    if (end != std::string_view::npos) {
      next = end;
      return bracket_matches(pattern, p, end, c, letter_case);
    }
  }
  if (e == '\\' && p + 1 < pattern.size()) {
    e = pattern[++p];
  }
  next = p + 1;
  return fold(e, letter_case) == fold(c, letter_case);
}

}  // namespace

// Greedy with one resume point: on a mismatch only the last `*` is widened by one character,
// which is enough for shell globs (earlier stars never need to retreat).
bool glob_match(std::string_view pattern, std::string_view text, GlobCase letter_case) {
  size_t p = 0;
  size_t t = 0;
  size_t star_p = std::string_view::npos;
  size_t star_t = 0;
  while (t < text.size()) {
    size_t next = 0;
    if (p < pattern.size() && pattern[p] == '*') {
      star_p = ++p;
      star_t = t;
    } else if (p < pattern.size() && element_matches(pattern, p, text[t], letter_case, next)) {
      p = next;
      ++t;
    } else if (star_p != std::string_view::npos) {
      p = star_p;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

}  // namespace sandshim
