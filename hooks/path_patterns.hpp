#pragma once

// Where a shell word may point once bash has expanded it, as a path pattern: literal text, with
// wildcards standing for what only the running command knows (a glob, a variable set by `read`,
// a `$(…)`). The hook refuses a write whose pattern may name a file the sandbox depends on, so a
// target it cannot resolve fails closed and a glob over the workspace's own files does not.

#include <string>
#include <string_view>
#include <vector>

namespace sandshim::hooks {

// The wildcards: control characters, so no real path holds them.
inline constexpr char k_any_name = '\x01';    // text within one component (a glob's `*`)
inline constexpr char k_any_text = '\x02';    // any text, slashes included (an unknown value)
inline constexpr char k_first_char = '\x03';  // one character, neither `.` nor `/` (a glob's
                                              // first: `*` never matches a leading dot)

// A glob's characters in literal text, until the words are joined: `*` and `?`/`[…]`.
inline constexpr char k_glob_any = '\x04';
inline constexpr char k_glob_one = '\x05';

// The pattern of one unknown value.
inline const std::string k_unknown_pattern(1, k_any_text);

bool has_wildcard(std::string_view pattern);

// True when some path matches both patterns.
bool patterns_overlap(std::string_view a, std::string_view b);

// A word's literal text as the patterns bash's globbing and brace expansion may make of it
// (`src/{a,b}.py` is two; `*`, `?` and `[…]` become wildcards). `globs`: the word has unquoted
// glob characters; without, the text is taken as it is.
std::vector<std::string> glob_patterns(std::string_view text, bool globs);

// The steps of glob_patterns, for a word whose parts come from elsewhere (variables): `text`
// with any wildcard or marker character made a plain name wildcard (it is no real path's);
// `{a,b}` alternatives; the glob characters of literal text marked; the marks made wildcards.
std::string literal_text(std::string_view text);
std::vector<std::string> brace_expanded(std::string_view text);
std::string marked_globs(std::string_view text);
std::vector<std::string> finished_globs(std::string_view text);

// `pattern` made absolute from `base` (itself a pattern), `.` and empty components dropped and
// `..` folded; a `..` after a wildcard may climb anywhere, so what precedes it becomes unknown.
std::string absolute_pattern(std::string_view pattern, std::string_view base);

// The text of a pattern for a message: wildcards shown as `*` and `…`.
std::string shown_pattern(std::string_view pattern);

}  // namespace sandshim::hooks
