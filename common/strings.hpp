#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandshim {

// Quotes a word for a POSIX shell so it is read back as exactly these bytes.
std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& words);

// Quotes a string for messages and logs: untrusted bytes never reach a terminal raw.
std::string quoted(std::string_view text);
// At most the first `max_bytes` of text, quoted as above, "..." after when cut: how a message
// cites a line of a file someone else wrote.
std::string excerpt(std::string_view text, size_t max_bytes = 64);
// An exact match for std::string, so argument-dependent lookup never picks std::quoted instead.
inline std::string quoted(const std::string& text) {
  return quoted(std::string_view(text));
}
inline std::string quoted(std::string& text) {
  return quoted(std::string_view(text));
}

// Whether `text` is one of a fixed list of words (a table of names, `k_...`).
template <size_t N>
bool one_of(const std::array<std::string_view, N>& list, std::string_view text) {
  return std::find(list.begin(), list.end(), text) != list.end();
}

std::vector<std::string> split_words(std::string_view text);
// The lines of `text` without their '\n'; a last line without one counts, an empty text has none.
std::vector<std::string> split_lines(std::string_view text);
// The text up to its first '\n' (all of it without one): the headline of an error or an answer.
std::string first_line_of(std::string_view text);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string trim(std::string_view text);
// ASCII letters lowered (config keys and section names); other bytes as they are.
std::string ascii_lower(std::string_view text);
// A byte below 0x20 or DEL: text that must not reach a mount spec, a terminal or a config value.
bool has_control_characters(std::string_view text);

// Shell-style wildcard match (`*`, `?`, `[...]`), case-sensitive.
bool glob_match(const std::string& pattern, const std::string& text);

// "512m", "1g", "64k", "1048576" -> bytes; nullopt when malformed or overflowing.
std::optional<uint64_t> parse_byte_size(std::string_view text);
// "30", "30s", "2m", "1h", "1.5s" -> milliseconds; nullopt when malformed or not positive.
std::optional<int64_t> parse_duration_ms(std::string_view text);
// Renders bytes the way users write them back ("512m").
std::string format_byte_size(uint64_t bytes);
std::string format_duration_ms(int64_t ms);

}  // namespace sandshim
