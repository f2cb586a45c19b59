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

// HMAC-SHA256 (RFC 2104) of `message` under `key`: the audit chain's keyed links.
std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message);
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// 64 lowercase hex digits of a digest.
std::string to_hex(const std::array<uint8_t, 32>& digest);

}  // namespace sandshim
