#include "common/hex.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/io.hpp"

namespace sandshim {

namespace {

constexpr std::string_view k_digits = "0123456789abcdef";

int digit_value(char c) {
  size_t at = k_digits.find(c);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

}  // namespace

std::string hex_encode(std::string_view bytes) {
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) {
    hex += k_digits[byte >> 4];
    hex += k_digits[byte & 0xf];
  }
  return hex;
}

std::optional<std::string> hex_decode(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return std::nullopt;
  }
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int high = digit_value(hex[i]);
    int low = digit_value(hex[i + 1]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    bytes += static_cast<char>(high << 4 | low);
  }
  return bytes;
}

bool is_lower_hex(std::string_view text) {
  return !text.empty() && text.find_first_not_of(k_digits) == std::string_view::npos;
}

std::string random_bytes(size_t count) {
  std::string random(count, '\0');
  size_t filled = 0;
  while (filled < random.size()) {
    ssize_t n = retry_on_eintr(
        [&] { return ::getrandom(random.data() + filled, random.size() - filled, 0); });
    if (n < 0) {
      throw Fatal("the kernel's random source failed (getrandom: " +
                  std::string(std::strerror(errno)) + "); nothing runs without it");
    }
    filled += static_cast<size_t>(n);
  }
  return random;
}

std::string random_hex(size_t bytes) {
  return hex_encode(random_bytes(bytes));
}

}  // namespace sandshim
