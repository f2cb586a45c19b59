#pragma once

#include <optional>
#include <string_view>

namespace sandshim {

// Whether `version` ("18.19.0", "v20.11") lies in `range`, read as npm reads package.json's
// engines: comparators (`>=20`, `<21.0.0`, `=18.x`) joined by spaces, `^` and `~`, partial and
// wildcard versions (`20`, `20.x`, `*`), hyphen ranges (`18 - 20`) and alternatives joined by
// `||`. nullopt when either cannot be read that way (a prerelease tag, `lts/*`): the caller then
// claims nothing rather than guess.
std::optional<bool> version_satisfies(std::string_view version, std::string_view range);

// The lowest major version `range` admits, probing each major's first and last release (0–99);
// nullopt when the range cannot be read or neither probe of any major meets it (`~18.18`).
std::optional<int> lowest_major(std::string_view range);

// npm's package names: lowercase letters, digits, '-', '.', '_' and '~', at most one `@scope/`
// in front, never starting with '.' or '_', at most 214 bytes.
bool is_npm_package_name(std::string_view name);

}  // namespace sandshim
