#include "common/escape.hpp"

#include <algorithm>

namespace sandshim {

namespace {

constexpr char k_hex[] = "0123456789abcdef";

bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

void append_hex_bytes(std::string& out, std::string_view bytes) {
  for (unsigned char c : bytes) {
    out += "\\x";
    out += k_hex[c >> 4];
    out += k_hex[c & 0xf];
  }
}

// A valid sequence a terminal or a line reader would act on: C0, DEL, C1, U+2028, U+2029.
bool is_control(std::string_view sequence) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(sequence[i]); };
  if (sequence.size() == 1) {
    return byte(0) < 0x20 || byte(0) == 0x7f;
  }
  bool c1 = sequence.size() == 2 && byte(0) == 0xC2 && byte(1) < 0xA0;
  bool separator = sequence.size() == 3 && byte(0) == 0xE2 && byte(1) == 0x80 &&
                   (byte(2) == 0xA8 || byte(2) == 0xA9);
  return c1 || separator;
}

// The sequence at `at` (one byte when invalid), encoded.
size_t append_escaped_sequence(std::string& out, std::string_view text, size_t at) {
  size_t length = utf8_sequence_length(text, at);
  if (length == 0) {
    append_hex_bytes(out, text.substr(at, 1));
    return 1;
  }
  std::string_view sequence = text.substr(at, length);
  if (sequence == "\\") {
    out += "\\\\";
  } else if (is_control(sequence)) {
    append_hex_bytes(out, sequence);
  } else {
    out += sequence;
  }
  return length;
}

// The code point of a multi-byte control sequence is_control accepted, or DEL.
unsigned control_code_point(std::string_view sequence) {
  auto byte = [&](size_t i) {
    return static_cast<unsigned>(static_cast<unsigned char>(sequence[i]));
  };
  if (sequence.size() == 3) {
    return 0x2000 + (byte(2) - 0x80);
  }
  return sequence.size() == 2 ? byte(1) : byte(0);
}

void append_unicode_escape(std::string& out, unsigned code) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += k_hex[(code >> shift) & 0xf];
  }
}

std::optional<int> hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return std::nullopt;
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) {
    return 1;
  }
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || at + length > text.size()) {
    return 0;
  }
  for (size_t i = 1; i < length; ++i) {
    if (!is_continuation(byte(i))) {
      return 0;
    }
  }
  bool overlong = (lead == 0xE0 && byte(1) < 0xA0) || (lead == 0xF0 && byte(1) < 0x90);
  bool out_of_range = (lead == 0xED && byte(1) >= 0xA0) || (lead == 0xF4 && byte(1) >= 0x90);
  return overlong || out_of_range ? 0 : length;
}

std::string escape_text(std::string_view text, size_t cap) {
  std::string out;
  out.reserve(std::min(text.size(), cap) + 8);
  size_t at = 0;
  while (at < text.size() && at + std::max<size_t>(utf8_sequence_length(text, at), 1) <= cap) {
    at += append_escaped_sequence(out, text, at);
  }
  if (at < text.size()) {
    out += "...[+" + std::to_string(text.size() - at) + " bytes]";
  }
  return out;
}

std::optional<std::string> unescape_text(std::string_view escaped) {
  std::string out;
  for (size_t at = 0; at < escaped.size(); ++at) {
    if (escaped[at] != '\\') {
      out += escaped[at];
    } else if (escaped.substr(at, 2) == "\\\\") {
      out += '\\';
      ++at;
    } else if (escaped.substr(at, 2) == "\\x" && at + 3 < escaped.size() &&
               hex_value(escaped[at + 2]) && hex_value(escaped[at + 3])) {
      out += static_cast<char>(*hex_value(escaped[at + 2]) * 16 + *hex_value(escaped[at + 3]));
      at += 3;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::string csv_escaped(std::string_view text, size_t cap) {
  std::string cell = escape_text(text, cap);
  bool needs_quotes = cell.find_first_of(",\"") != std::string::npos ||
                      (!cell.empty() && (cell.front() == ' ' || cell.back() == ' '));
  if (!needs_quotes) {
    return cell;
  }
  std::string quoted_cell = "\"";
  for (char c : cell) {
    quoted_cell += c == '"' ? "\"\"" : std::string(1, c);
  }
  return quoted_cell + "\"";
}

std::string escape_json_controls(std::string json) {
  std::string out;
  out.reserve(json.size());
  for (size_t at = 0; at < json.size();) {
    size_t length = std::max<size_t>(utf8_sequence_length(json, at), 1);
    std::string_view sequence = std::string_view(json).substr(at, length);
    bool raw_in_json = sequence.size() == 1 && sequence[0] != '\x7f';  // C0 is JSON's whitespace
    if (is_control(sequence) && !raw_in_json) {
      append_unicode_escape(out, control_code_point(sequence));
    } else {
      out += sequence;
    }
    at += length;
  }
  return out;
}

}  // namespace sandshim
