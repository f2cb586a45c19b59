#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandshim {

// SHA-256 (FIPS 180-4) of one buffer. Our own, so that the shim does not load libcrypto for
// two hashes per run: its relocations and initialisation were a third of the shim's start-up
// CPU and 3 MiB of its resident memory.
std::array<uint8_t, 32> sha256(std::string_view bytes);

// The same digest as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace sandshim
