#include "common/strings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/escape.hpp"
#include "common/glob.hpp"

namespace sandshim {

namespace {

// shell_quote's words read back the same in any position, the command name's included.

// `NAME=…` or `NAME+=…`: where a command name is expected, bash reads the word as an assignment.
bool reads_as_assignment(std::string_view word) {
  std::string_view name = word.substr(0, word.find('='));
  if (name.size() == word.size()) {
    return false;
  }
  if (name.ends_with('+')) {
    name.remove_suffix(1);
  }
  return !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])) == 0 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
         });
}

// `do`, `if`, `time`…: a reserved word where a command name is expected is syntax, not a command.
bool is_reserved_word(std::string_view word) {
  static constexpr std::string_view k_reserved[] = {
      "case",     "coproc", "do", "done",   "elif", "else", "esac",  "fi",   "for",
      "function", "if",     "in", "select", "then", "time", "until", "while"};
  return std::find(std::begin(k_reserved), std::end(k_reserved), word) != std::end(k_reserved);
}

}  // namespace

std::string shell_quote(std::string_view word) {
  if (!word.empty() && !reads_as_assignment(word) && !is_reserved_word(word) &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789@%+=:,./_-") == std::string_view::npos) {
    return std::string(word);
  }
  std::string result = "'";
  for (char c : word) {
    if (c == '\'') {
      result += "'\\''";
    } else {
      result += c;
    }
  }
  return result + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string result;
  for (const auto& word : words) {
    if (!result.empty()) {
      result += ' ';
    }
    result += shell_quote(word);
  }
  return result;
}

std::string quoted(std::string_view text) {
  std::string result = "\"";
  for (char c : escape_text(text)) {
    if (c == '"') {
      result += '\\';
    }
    result += c;
  }
  return result + "\"";
}

std::string excerpt(std::string_view text, size_t max_bytes) {
  return text.size() <= max_bytes ? quoted(text) : quoted(text.substr(0, max_bytes)) + "...";
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return lines;
}

std::string first_line_of(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string current;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ',') {
      if (!current.empty()) {
        words.push_back(std::move(current));
        current.clear();
      }
    } else {
      current += c;
    }
  }
  if (!current.empty()) {
    words.push_back(std::move(current));
  }
  return words;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string result;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      result += separator;
    }
    result += parts[i];
  }
  return result;
}

std::string trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) {
    return {};
  }
  size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string ascii_lower(std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return lowered;
}

bool has_control_characters(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

bool glob_match(const std::string& pattern, const std::string& text) {
  return glob_match(std::string_view(pattern), std::string_view(text), GlobCase::sensitive);
}

namespace {

// Splits "1.5s" into a non-negative number and its unit suffix.
std::optional<std::pair<double, std::string>> number_and_unit(std::string_view text) {
  std::string s = trim(text);
  size_t unit_at = s.find_first_not_of("0123456789.");
  std::string number = s.substr(0, unit_at);
  std::string unit = unit_at == std::string::npos ? "" : s.substr(unit_at);
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
      number.find('.') != number.rfind('.')) {
    return std::nullopt;
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  for (auto& c : unit) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return std::make_pair(value, unit);
}

std::optional<double> unit_factor(const std::string& unit,
                                  std::initializer_list<std::pair<const char*, double>> table) {
  for (const auto& [name, factor] : table) {
    if (unit == name) {
      return factor;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  auto parsed = number_and_unit(text);
  if (!parsed) {
    return std::nullopt;
  }
  auto factor = unit_factor(parsed->second, {{"", 1.0},
                                             {"b", 1.0},
                                             {"k", 1024.0},
                                             {"kb", 1024.0},
                                             {"m", 1048576.0},
                                             {"mb", 1048576.0},
                                             {"g", 1073741824.0},
                                             {"gb", 1073741824.0}});
  if (!factor) {
    return std::nullopt;
  }
  double bytes = parsed->first * *factor;
  if (bytes > static_cast<double>(std::numeric_limits<int64_t>::max()) / 2) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(std::llround(bytes));
}

std::optional<int64_t> parse_duration_ms(std::string_view text) {
  auto parsed = number_and_unit(text);
  if (!parsed) {
    return std::nullopt;
  }
  auto factor = unit_factor(
      parsed->second, {{"", 1000.0}, {"ms", 1.0}, {"s", 1000.0}, {"m", 60000.0}, {"h", 3.6e6}});
  if (!factor) {
    return std::nullopt;
  }
  double ms = parsed->first * *factor;
  if (ms < 1 || ms > 1e12) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(ms));
}

std::string format_byte_size(uint64_t bytes) {
  static constexpr std::pair<uint64_t, char> k_units[] = {
      {1073741824ULL, 'g'}, {1048576ULL, 'm'}, {1024ULL, 'k'}};
  for (const auto& [size, suffix] : k_units) {
    if (bytes >= size && bytes % size == 0) {
      return std::to_string(bytes / size) + suffix;
    }
  }
  return std::to_string(bytes);
}

std::string format_duration_ms(int64_t ms) {
  if (ms % 1000 == 0) {
    return std::to_string(ms / 1000) + "s";
  }
  return std::to_string(ms) + "ms";
}

}  // namespace sandshim
