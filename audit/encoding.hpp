#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandshim::audit {

// How argv keeps its exact bytes: agents may pass arguments that are not valid UTF-8, which a JSON
// string cannot carry. The `argv_raw` BLOB holds every argument followed by a NUL byte (real
// arguments never contain NUL); the `argv` TEXT column is a JSON array for people and json_each(),
// in which invalid bytes read as U+FFFD.
std::string pack_args(const std::vector<std::string>& args);
std::vector<std::string> unpack_args(std::string_view packed);

// A JSON array of strings that is always valid JSON (invalid UTF-8 becomes U+FFFD).
std::string args_to_json(const std::vector<std::string>& args);

bool is_valid_utf8(std::string_view text);
// The text with each invalid byte replaced by U+FFFD, so it can go into JSON.
std::string to_valid_utf8(std::string_view text);

// The text made safe to print on a terminal (escape_text, uncut): controls and invalid UTF-8 are
// shown as \xNN; newlines are kept only when `keep_newlines`.
std::string printable(std::string_view text, bool keep_newlines = false);

// How many characters a terminal shows for valid UTF-8 text (one per code point).
size_t display_width(std::string_view text);

}  // namespace sandshim::audit
