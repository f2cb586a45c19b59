#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

// The one encoder for bytes a caller controls on their way into a line-oriented output (a log
// line, the anchor log, a table cell, a CSV field). Knows nothing of sandshim.
namespace sandshim {

// How many input bytes escape_text encodes before it cuts the rest (4 KiB): a log line or an
// audit cell stays a line, however long the command that reached it.
inline constexpr size_t k_escape_cap = 4096;
// No cap: formats whose records are bounded elsewhere (the store's tails) keep every byte.
inline constexpr size_t k_no_escape_cap = static_cast<size_t>(-1);

// `text` encoded so it can neither end the line or field it sits in nor drive a terminal:
// backslash becomes `\\`; C0 controls (newline, CR, ESC, NUL…), DEL, C1 controls (U+0080 to
// U+009F), the Unicode line and paragraph separators and every byte that is not valid UTF-8
// become `\xHH` per byte; other valid UTF-8 stays. Past `cap` input bytes (cut at a character
// boundary) it ends with `...[+N bytes]`. Below the cap, unescape_text gives `text` back.
std::string escape_text(std::string_view text, size_t cap = k_escape_cap);

// The bytes escape_text encoded; nullopt for text it could not have written.
std::optional<std::string> unescape_text(std::string_view escaped);

// A CSV field (RFC 4180) of escaped `text`: quoted when it holds a comma, a quote or edge spaces.
std::string csv_escaped(std::string_view text, size_t cap = k_no_escape_cap);

// A JSON document's text with the controls JSON allows raw (DEL, C1, U+2028, U+2029) written as
// \u escapes, so a JSON line shows no control to a terminal and stays one line to every reader.
// Those bytes only occur inside strings, so the document's value is unchanged.
std::string escape_json_controls(std::string json);

// The length of the valid UTF-8 sequence at `at`, 0 when invalid (overlong forms, surrogates
// and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view text, size_t at);

}  // namespace sandshim
