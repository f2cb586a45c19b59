#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/sha256.hpp"

namespace {

// OpenSSL's answer, the independent reference.
std::string openssl_sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += k_digits[digest[i] >> 4];
    hex += k_digits[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-4 examples", "[sha256]") {
  CHECK(sandshim::sha256_hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sandshim::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sandshim::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sandshim::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 agrees with OpenSSL at every padding boundary", "[sha256]") {
  std::string bytes;
  for (size_t size = 0; size <= 300; ++size) {
    INFO("size " << size);
    CHECK(sandshim::sha256_hex(bytes) == openssl_sha256_hex(bytes));
    bytes += static_cast<char>((size * 131 + 7) & 0xff);
  }
}

TEST_CASE("hmac_sha256 matches RFC 4231 and OpenSSL", "[sha256][hmac]") {
  CHECK(sandshim::hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(sandshim::hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  for (size_t key_size : {0, 1, 63, 64, 65, 131}) {
    std::string key(key_size, 'k');
    std::string message(key_size * 3 + 1, 'm');
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &size);
    std::array<uint8_t, 32> expected{};
    std::copy(digest, digest + 32, expected.begin());
    INFO(key_size);
    CHECK(sandshim::hmac_sha256_hex(key, message) == sandshim::to_hex(expected));
  }
}
