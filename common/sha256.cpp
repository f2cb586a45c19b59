#include "common/sha256.hpp"

#include <cstring>

#include "common/hex.hpp"

namespace sandshim {

namespace {

constexpr uint32_t k_round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

// The message schedule: the block's 16 big-endian words stretched to 64 (FIPS 180-4, 6.2.2 step 1).
void expand(const unsigned char* block, uint32_t w[64]) {
  for (int i = 0; i < 16; ++i) {
    w[i] = uint32_t{block[4 * i]} << 24 | uint32_t{block[4 * i + 1]} << 16 |
           uint32_t{block[4 * i + 2]} << 8 | uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
}

// One 64-byte block into the running state (FIPS 180-4, 6.2.2).
void compress(uint32_t state[8], const unsigned char* block) {
  uint32_t w[64];
  expand(block, w);
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                  k_round_constants[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  uint32_t add[8] = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) {
    state[i] += add[i];
  }
}

// The tail, a 0x80 byte, zeros, and the length in bits as a big-endian 64-bit number: one or
// two final blocks.
void compress_last(uint32_t state[8], std::string_view bytes, size_t whole) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  unsigned char last[128] = {};
  size_t tail = bytes.size() - whole;
  if (tail > 0) {
    std::memcpy(last, data + whole, tail);
  }
  last[tail] = 0x80;
  size_t padded = tail + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = static_cast<uint64_t>(bytes.size()) * 8;
  for (int i = 0; i < 8; ++i) {
    last[padded - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  }
  for (size_t offset = 0; offset < padded; offset += 64) {
    compress(state, last + offset);
  }
}

}  // namespace

std::array<uint8_t, 32> sha256(std::string_view bytes) {
  uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t whole = bytes.size() / 64 * 64;
  for (size_t offset = 0; offset < whole; offset += 64) {
    compress(state, data + offset);
  }
  compress_last(state, bytes, whole);
  std::array<uint8_t, 32> digest{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) {
      digest[4 * i + j] = static_cast<uint8_t>(state[i] >> (24 - 8 * j));
    }
  }
  return digest;
}

std::string to_hex(const std::array<uint8_t, 32>& digest) {
  return hex_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string sha256_hex(std::string_view bytes) {
  return to_hex(sha256(bytes));
}

std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message) {
  constexpr size_t k_block = 64;
  std::string block_key(key);
  if (block_key.size() > k_block) {
    auto hashed = sha256(block_key);
    block_key.assign(hashed.begin(), hashed.end());
  }
  block_key.resize(k_block, '\0');
  std::string inner(k_block, '\0');
  std::string outer(k_block, '\0');
  for (size_t i = 0; i < k_block; ++i) {
    inner[i] = static_cast<char>(block_key[i] ^ 0x36);
    outer[i] = static_cast<char>(block_key[i] ^ 0x5c);
  }
  inner.append(message);
  auto inner_digest = sha256(inner);
  outer.append(inner_digest.begin(), inner_digest.end());
  return sha256(outer);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  return to_hex(hmac_sha256(key, message));
}

}  // namespace sandshim
