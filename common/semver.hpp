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

}  // namespace sandshim
