#include "audit/encoding.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "common/error.hpp"
#include "common/escape.hpp"

namespace sandshim::audit {

namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";

bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
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
    size_t length = utf8_sequence_length(text, at);
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
    size_t length = utf8_sequence_length(text, at);
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

std::string printable(std::string_view text, bool keep_newlines) {
  if (!keep_newlines) {
    return escape_text(text, k_no_escape_cap);
  }
  std::string result;
  for (size_t begin = 0;;) {
    size_t end = text.find('\n', begin);
    result += escape_text(text.substr(begin, end - begin), k_no_escape_cap);
    if (end == std::string_view::npos) {
      return result;
    }
    result += '\n';
    begin = end + 1;
  }
}

size_t display_width(std::string_view text) {
  size_t width = 0;
  for (unsigned char c : text) {
    width += is_continuation(c) ? 0 : 1;
  }
  return width;
}

}  // namespace sandshim::audit
