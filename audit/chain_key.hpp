#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace sandshim::audit {

// The secret the audit chain's links are keyed with (HMAC-SHA256). Only the audit's writer (the
// broker's user) can read its file, so a user who can edit rows cannot recompute their links.
struct ChainKey {
  std::string secret;  // 32 random bytes

  // 16 hex digits naming the key, kept in chain_state.key_id: verify tells "another key" apart.
  std::string id() const;
  // The HMAC-SHA256 of `message`, as 64 hex digits.
  std::string mac(std::string_view message) const;
};

// The key at `path`, created on first use (32 bytes from getrandom, written as 64 hex digits,
// mode 0400, owned by this user). Refuses a key file that others may read or write.
ChainKey load_or_create_chain_key(const std::filesystem::path& path);

// The key when this process may read it (verify as root or the broker's user), else nullopt.
std::optional<ChainKey> read_chain_key(const std::filesystem::path& path);

}  // namespace sandshim::audit
