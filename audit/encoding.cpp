#include "audit/encoding.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "common/error.hpp"

namespace sandshim::audit {

namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";

bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// The length of the valid UTF-8 sequence that starts at `at`, or 0 when it is invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t sequence_length(std::string_view text, size_t at) {
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

}  // namespace

std::string pack_args(const std::vector<std::string>& args) {
  std::string packed;
  for (const auto& arg : args) {
    if (arg.find('\0') != std::string::npos) {
      throw Fatal("internal error: an argument holds a NUL byte, which no real argv can");
    }
    packed += arg;
    packed += '\0';
  }
  return packed;
}

std::vector<std::string> unpack_args(std::string_view packed) {
  std::vector<std::string> args;
  size_t begin = 0;
  for (size_t end = packed.find('\0'); end != std::string_view::npos;
       end = packed.find('\0', begin)) {
    args.emplace_back(packed.substr(begin, end - begin));
    begin = end + 1;
  }
  return args;
}

namespace {

// `text` (valid UTF-8) as a JSON string, escaped exactly as nlohmann::json::dump() does.
void append_json_string(std::string& out, std::string_view text) {
  static constexpr char k_digits[] = "0123456789abcdef";
  static constexpr std::pair<char, std::string_view> k_escapes[] = {
      {'"', "\\\""}, {'\\', "\\\\"}, {'\b', "\\b"}, {'\f', "\\f"},
      {'\n', "\\n"}, {'\r', "\\r"},  {'\t', "\\t"}};
  out += '"';
  for (char c : text) {
    const auto* escape = std::find_if(std::begin(k_escapes), std::end(k_escapes),
                                      [c](const auto& entry) { return entry.first == c; });
    if (escape != std::end(k_escapes)) {
      out += escape->second;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += "\\u00";
      out += k_digits[static_cast<unsigned char>(c) >> 4];
      out += k_digits[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

// Written by hand rather than through nlohmann::json: the store encodes five lists a run, and
// building a json value for each was 6 % of a run's cost (bench/audit.sh).
std::string args_to_json(const std::vector<std::string>& args) {
  std::string json = "[";
  for (const auto& arg : args) {
    if (json.size() > 1) {
      json += ',';
    }
    if (is_valid_utf8(arg)) {
      append_json_string(json, arg);
    } else {
      append_json_string(json, to_valid_utf8(arg));
    }
  }
  json += ']';
  return json;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    size_t length = sequence_length(text, at);
    if (length == 0) {
      return false;
    }
    at += length;
  }
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    size_t length = sequence_length(text, at);
    if (length == 0) {
      result += k_replacement;
      ++at;
    } else {
      result.append(text.substr(at, length));
      at += length;
    }
  }
  return result;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex += k_digits[c >> 4];
    hex += k_digits[c & 0xf];
  }
  return hex;
}

std::string printable(std::string_view text, bool keep_newlines) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string valid = to_valid_utf8(text);
  std::string result;
  result.reserve(valid.size());
  for (unsigned char c : valid) {
    bool kept_whitespace = keep_newlines && (c == '\n' || c == '\t');
    if ((c < 0x20 || c == 0x7f) && !kept_whitespace) {
      result += "\\x";
      result += k_digits[c >> 4];
      result += k_digits[c & 0xf];
    } else {
      result += static_cast<char>(c);
    }
  }
  return result;
}

size_t display_width(std::string_view text) {
  size_t width = 0;
  for (unsigned char c : text) {
    width += is_continuation(c) ? 0 : 1;
  }
  return width;
}

}  // namespace sandshim::audit
