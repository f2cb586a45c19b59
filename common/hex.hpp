#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandshim {

// Lower-case hex of each byte, two digits a byte.
std::string hex_encode(std::string_view bytes);
// The bytes of an even-length lower-case hex text; nullopt for anything else.
std::optional<std::string> hex_decode(std::string_view hex);
// Only lower-case hex digits, and at least one.
bool is_lower_hex(std::string_view text);
// `count` random bytes from the kernel (getrandom). Throws Fatal when the kernel gives none: an
// identifier, token or key never falls back to something guessable.
std::string random_bytes(size_t count);
// random_bytes(bytes) in hex.
std::string random_hex(size_t bytes);

}  // namespace sandshim
