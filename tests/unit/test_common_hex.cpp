#include <catch2/catch.hpp>

#include "common/hex.hpp"

using namespace sandshim;

TEST_CASE("hex encodes every byte and decodes back", "[hex]") {
  std::string all;
  for (int byte = 0; byte < 256; ++byte) {
    all += static_cast<char>(byte);
  }
  std::string hex = hex_encode(all);
  CHECK(hex.size() == 512);
  CHECK(hex.substr(0, 6) == "000102");
  CHECK(hex.substr(506) == "fdfeff");
  CHECK(hex_decode(hex) == all);
  CHECK(hex_encode("") == "");
  CHECK(hex_decode("") == std::string());
}

TEST_CASE("hex decoding refuses what it did not encode", "[hex]") {
  CHECK_FALSE(hex_decode("abc"));  // odd length
  CHECK_FALSE(hex_decode("AB"));   // upper case
  CHECK_FALSE(hex_decode("0g"));   // not a digit
  CHECK_FALSE(hex_decode(" 0"));   // space
  CHECK(is_lower_hex("0123456789abcdef"));
  CHECK_FALSE(is_lower_hex(""));
  CHECK_FALSE(is_lower_hex("12-3"));
}

TEST_CASE("random identifiers are hex of the asked length and differ", "[hex]") {
  std::string first = random_hex(8);
  CHECK(first.size() == 16);
  CHECK(is_lower_hex(first));
  CHECK(random_hex(8) != first);
}
