#pragma once

#include <optional>
#include <string_view>

namespace sandshim {

// Whether `version` ("3.11.2") satisfies `specifiers` (">=3.9,<4", "~=3.10", "==3.12.*"), read
// as PEP 440 reads pyproject.toml's requires-python: clauses joined by commas, each one of
// `~=`, `==`, `!=` (both with a trailing `.*`), `<=`, `>=`, `<`, `>` and `===`, release numbers
// compared with zeros padded. nullopt when either cannot be read that way (a pre-release, an
// epoch, a local version): the caller then claims nothing rather than guess.
std::optional<bool> pep440_satisfies(std::string_view version, std::string_view specifiers);

}  // namespace sandshim
