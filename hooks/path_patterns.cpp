#include "hooks/path_patterns.hpp"

#include <algorithm>

namespace sandshim::hooks {

namespace {

// More alternatives than this (`{a,b}{c,d}{e,f}…`) and the word is taken as unknown.
constexpr size_t k_max_alternatives = 16;

bool is_wildcard(char c) {
  return c == k_any_name || c == k_any_text || c == k_first_char;
}

bool is_run(char c) {
  return c == k_any_name || c == k_any_text;
}

// True when a run wildcard may take all of the token `t` into its own text.
bool absorbs(char run, char t) {
  return run == k_any_text || (t != '/' && t != k_any_text);
}

// Two single-character tokens that one character can match.
bool compatible(char a, char b) {
  if (a == k_first_char || b == k_first_char) {
    char other = a == k_first_char ? b : a;
    return other == k_first_char || (other != '.' && other != '/');
  }
  return a == b;
}

std::vector<std::string> brace_alternatives(std::string_view text);

// `{x}` or `{1..3}` from `open` to `close`: a sequence is one name of unknown text, `{x}` stays as
// written; the alternatives are those of the rest of `text`.
std::vector<std::string> single_brace_alternatives(std::string_view text, size_t open,
                                                   size_t close) {
  bool sequence = text.substr(open, close - open).find("..") != std::string_view::npos;
  std::string rest(text.substr(close + 1));
  std::vector<std::string> tail = brace_alternatives(rest);
  std::string middle =
      sequence ? std::string(1, k_any_name) : std::string(text.substr(open, close - open + 1));
  std::string head = std::string(text.substr(0, open)) + middle;
  if (tail.empty()) {
    return sequence ? std::vector<std::string>{head + rest} : std::vector<std::string>{};
  }
  for (std::string& alternative : tail) {
    alternative = head + alternative;
  }
  return tail;
}

// `{a,b}` from `open` to `close`, `commas` its top-level commas: each alternative in its text,
// expanded further.
std::vector<std::string> comma_alternatives(std::string_view text, size_t open, size_t close,
                                            std::vector<size_t> commas) {
  std::vector<std::string> result;
  size_t start = open + 1;
  commas.push_back(close);
  for (size_t comma : commas) {
    std::string joined = std::string(text.substr(0, open)) +
                         std::string(text.substr(start, comma - start)) +
                         std::string(text.substr(close + 1));
    std::vector<std::string> more = brace_alternatives(joined);
    if (more.empty()) {
      more.push_back(joined);
    }
    result.insert(result.end(), more.begin(), more.end());
    start = comma + 1;
    if (result.size() > k_max_alternatives) {
      return {k_unknown_pattern};
    }
  }
  return result;
}

// `{a,b}` alternatives at the top level of `text`, from its first brace; empty when none.
std::vector<std::string> brace_alternatives(std::string_view text) {
  size_t open = text.find('{');
  if (open == std::string_view::npos) {
    return {};
  }
  int depth = 0;
  std::vector<size_t> commas;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') {
      ++depth;
    } else if (text[i] == ',' && depth == 1) {
      commas.push_back(i);
    } else if (text[i] == '}' && --depth == 0) {
      return commas.empty() ? single_brace_alternatives(text, open, i)
                            : comma_alternatives(text, open, i, commas);
    }
  }
  return {};
}

// The pairs of positions (in one pattern, in the other) still to try, each tried once.
class PositionPairs {
 public:
  PositionPairs(size_t n, size_t m) : m_n(n), m_m(m), m_seen((n + 1) * (m + 1), 0) {}

  void push(size_t i, size_t j) {
    if (i <= m_n && j <= m_m && m_seen[i * (m_m + 1) + j] == 0) {
      m_seen[i * (m_m + 1) + j] = 1;
      m_todo.emplace_back(i, j);
    }
  }

  bool empty() const { return m_todo.empty(); }

  std::pair<size_t, size_t> pop() {
    auto pair = m_todo.back();
    m_todo.pop_back();
    return pair;
  }

 private:
  size_t m_n;
  size_t m_m;
  std::vector<char> m_seen;
  std::vector<std::pair<size_t, size_t>> m_todo;
};

// The positions one token on from (i, j): a run wildcard may end, or take a token of the other
// pattern into its text; two single tokens may match one character.
void push_next_positions(std::string_view a, std::string_view b, size_t i, size_t j,
                         PositionPairs& todo) {
  size_t n = a.size();
  size_t m = b.size();
  char x = i < n ? a[i] : '\0';
  char y = j < m ? b[j] : '\0';
  if (i < n && is_run(x)) {
    todo.push(i + 1, j);
    if (j < m && absorbs(x, y)) {
      todo.push(i, j + 1);
    }
  }
  if (j < m && is_run(y)) {
    todo.push(i, j + 1);
    if (i < n && absorbs(y, x)) {
      todo.push(i + 1, j);
    }
  }
  if (i < n && j < m && !is_run(x) && !is_run(y) && compatible(x, y)) {
    todo.push(i + 1, j + 1);
  }
}

bool is_glob_marker(char c) {
  return c == k_glob_any || c == k_glob_one;
}

}  // namespace

std::string marked_globs(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '[') {
      size_t close = text.find(']', i + 2);
      if (close != std::string_view::npos &&
          text.substr(i, close - i).find('/') == std::string_view::npos) {
        i = close;
        c = '?';
      }
    }
    out += c == '*' ? k_glob_any : c == '?' ? k_glob_one : c;
  }
  return out;
}

std::vector<std::string> finished_globs(std::string_view text) {
  std::vector<std::string> out = {""};
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!is_glob_marker(c)) {
      for (std::string& pattern : out) {
        pattern += c;
      }
      continue;
    }
    bool component_start = i == 0 || text[i - 1] == '/';
    char next = i + 1 < text.size() ? text[i + 1] : '/';
    bool plain_next = next != '.' && next != '/' && !is_glob_marker(next) && !is_wildcard(next);
    std::vector<std::string> more;
    for (std::string& pattern : out) {
      if (component_start && c == k_glob_any && plain_next) {
        more.push_back(pattern);  // `*rc` may match `rc` itself
      }
      pattern += component_start ? std::string{k_first_char, k_any_name} : std::string{k_any_name};
    }
    out.insert(out.end(), more.begin(), more.end());
    if (out.size() > k_max_alternatives) {
      return {k_unknown_pattern};
    }
  }
  return out;
}

std::vector<std::string> brace_expanded(std::string_view text) {
  std::vector<std::string> alternatives = brace_alternatives(text);
  if (alternatives.empty()) {
    alternatives.emplace_back(text);
  }
  return alternatives;
}

bool has_wildcard(std::string_view pattern) {
  return std::any_of(pattern.begin(), pattern.end(), is_wildcard);
}

bool patterns_overlap(std::string_view a, std::string_view b) {
  PositionPairs todo(a.size(), b.size());
  todo.push(0, 0);
  while (!todo.empty()) {
    auto [i, j] = todo.pop();
    if (i == a.size() && j == b.size()) {
      return true;
    }
    push_next_positions(a, b, i, j, todo);
  }
  return false;
}

std::string literal_text(std::string_view text) {
  std::string plain(text);
  std::replace_if(
      plain.begin(), plain.end(), [](char c) { return is_wildcard(c) || is_glob_marker(c); },
      k_any_name);
  return plain;
}

std::vector<std::string> glob_patterns(std::string_view text, bool globs) {
  std::string plain = literal_text(text);
  if (!globs) {
    return {plain};
  }
  std::vector<std::string> result;
  for (const std::string& word : brace_expanded(plain)) {
    std::vector<std::string> patterns = finished_globs(marked_globs(word));
    result.insert(result.end(), patterns.begin(), patterns.end());
  }
  return result.size() > k_max_alternatives ? std::vector<std::string>{k_unknown_pattern} : result;
}

std::string absolute_pattern(std::string_view pattern, std::string_view base) {
  std::string whole = pattern.starts_with('/') || pattern.starts_with(k_any_text)
                          ? std::string(pattern)
                          : std::string(base) + "/" + std::string(pattern);
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= whole.size()) {
    size_t slash = std::min(whole.find('/', start), whole.size());
    std::string part = whole.substr(start, slash - start);
    if (part == "..") {
      if (!parts.empty() && has_wildcard(parts.back())) {
        parts = {k_unknown_pattern};
      } else if (!parts.empty()) {
        parts.pop_back();
      }
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = slash + 1;
  }
  std::string result = whole.starts_with('/') ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    result += (i == 0 ? "" : "/") + parts[i];
  }
  return result;
}

std::string shown_pattern(std::string_view pattern) {
  std::string shown;
  for (char c : pattern) {
    if (c == k_any_name) {
      shown += "*";
    } else if (c == k_any_text) {
      shown += "…";
    } else if (c != k_first_char) {
      shown += c;
    }
  }
  return shown;
}

}  // namespace sandshim::hooks
