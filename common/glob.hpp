#pragma once

#include <string_view>

namespace sandshim {

enum class GlobCase { sensitive, ignored };

// Shell-style wildcard match of the whole text (`*`, `?`, `[...]` with ranges and `!`/`^`,
// `\` escapes; `*` also matches `/`). Patterns come from workspace files, so the cost is bounded
// by pattern length times text length, whatever the number of `*` (fnmatch backtracks
// exponentially on them).
// (common/strings.hpp's two-argument glob_match is this one, case-sensitive.)
bool glob_match(std::string_view pattern, std::string_view text, GlobCase letter_case);

}  // namespace sandshim
