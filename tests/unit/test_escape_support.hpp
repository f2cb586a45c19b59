#pragma once

// Hostile strings and checks for the property tests of every line-oriented writer.

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/escape.hpp"

namespace sandshim::testing {

// `count` strings of up to `max_length` pieces, from a fixed seed: line breaks, ESC sequences,
// NUL, DEL, C1 and line separators, invalid UTF-8, quotes, commas, backslashes and plain text.
inline std::vector<std::string> hostile_strings(size_t count, size_t max_length) {
  static const std::vector<std::string> k_pieces{"\n",
                                                 "\r",
                                                 "\r\n",
                                                 "\x1b[2J",
                                                 std::string(1, '\0'),
                                                 "\x7f",
                                                 "\xc2\x85",
                                                 "\xc2\x9b",
                                                 "\xe2\x80\xa8",
                                                 "\xff",
                                                 "\xc0\xaf",
                                                 "\xed\xa0\x80",
                                                 "\xe2\x82",
                                                 "\"",
                                                 ",",
                                                 "\\",
                                                 "\\x0a",
                                                 " ",
                                                 "\t",
                                                 "head 1 ",
                                                 "caf\xc3\xa9",
                                                 "\xf0\x9f\x98\x80",
                                                 "a",
                                                 "z9"};
  std::mt19937 random(20261203);
  std::uniform_int_distribution<size_t> piece(0, k_pieces.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::string> strings;
  for (size_t i = 0; i < count; ++i) {
    std::string text;
    size_t length = random() % (max_length + 1);
    for (size_t j = 0; j < length; ++j) {
      text += random() % 4 == 0 ? std::string(1, static_cast<char>(byte(random)))
                                : k_pieces[piece(random)];
    }
    strings.push_back(std::move(text));
  }
  return strings;
}

// Whether `text` holds anything that could end a line or drive a terminal: a C0 control, DEL, a
// C1 control, a line separator, or bytes that are not UTF-8.
inline bool has_raw_control(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    size_t length = utf8_sequence_length(text, at);
    auto lead = static_cast<unsigned char>(text[at]);
    auto next = length > 1 ? static_cast<unsigned char>(text[at + 1]) : 0;
    bool separator = length == 3 && text.substr(at, 2) == "\xe2\x80" &&
                     (text[at + 2] == '\xa8' || text[at + 2] == '\xa9');
    if (length == 0 || lead < 0x20 || lead == 0x7f || (lead == 0xc2 && next < 0xa0) || separator) {
      return true;
    }
    at += length;
  }
  return false;
}

// The fields of one RFC 4180 line (no line breaks inside).
inline std::vector<std::string> read_csv_line(std::string_view line) {
  std::vector<std::string> fields(1);
  bool in_quotes = false;
  for (size_t at = 0; at < line.size(); ++at) {
    char c = line[at];
    if (in_quotes && c == '"' && at + 1 < line.size() && line[at + 1] == '"') {
      fields.back() += '"';
      ++at;
    } else if (c == '"') {
      in_quotes = !in_quotes;
    } else if (c == ',' && !in_quotes) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace sandshim::testing
