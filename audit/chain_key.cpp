#include "audit/chain_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::audit {

namespace {

constexpr size_t k_secret_bytes = 32;

[[noreturn]] void key_error(const std::filesystem::path& path, const std::string& what,
                            const std::string& fix) {
  throw Fatal("audit key " + quoted(path.string()) + ": " + what + "; fix: " + fix);
}

std::string random_secret(const std::filesystem::path& path) {
  try {
    return random_bytes(k_secret_bytes);
  } catch (const Fatal& e) {
    key_error(path, e.what(), "check the kernel's random source");
  }
}

std::optional<std::string> bytes_of_hex(std::string_view hex) {
  if (hex.size() != 2 * k_secret_bytes) {
    return std::nullopt;
  }
  return hex_decode(hex);
}

// Writes a new key beside `path` and links it into place: link() never replaces a key that a
// concurrent first use made meanwhile.
void create_key_file(const std::filesystem::path& path) {
  std::filesystem::path temporary = path.string() + ".new." + std::to_string(::getpid());
  UniqueFd fd(
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400));
  if (!fd.valid()) {
    key_error(path, "cannot create it: " + std::string(std::strerror(errno)),
              "make " + path.parent_path().string() + " writable by the audit's writer");
  }
  std::string text = hex_encode(random_secret(path)) + "\n";
  bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                 ::fsync(fd.get()) == 0;
  int linked = written ? ::link(temporary.c_str(), path.c_str()) : -1;
  int saved = errno;
  ::unlink(temporary.c_str());
  if (!written || (linked != 0 && saved != EEXIST)) {
    key_error(path, "cannot write it: " + std::string(std::strerror(saved)),
              "check the free space and permissions of " + path.parent_path().string());
  }
}

// The secret from an open key file whose owner and mode were checked.
ChainKey key_from(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    key_error(path, "not a regular file", "remove it; the audit's writer makes a new one");
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    key_error(path, "owned by uid " + std::to_string(st.st_uid) + " with mode " + mode,
              "it must be the writer's own with mode 0400: chmod 0400 " + path.string());
  }
  char buffer[2 * k_secret_bytes + 2] = {};
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  auto secret =
      bytes_of_hex(trim(std::string(buffer, static_cast<size_t>(std::max<ssize_t>(n, 0)))));
  if (!secret) {
    key_error(path, "does not hold 64 hex digits", "restore it from a backup");
  }
  return ChainKey{*secret};
}

}  // namespace

std::string ChainKey::id() const {
  return hmac_sha256_hex(secret, "sandshim-audit-key-id").substr(0, 16);
}

std::string ChainKey::mac(std::string_view message) const {
  return hmac_sha256_hex(secret, message);
}

ChainKey load_or_create_chain_key(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid() && errno == ENOENT) {
    create_key_file(path);
    fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  }
  if (!fd.valid()) {
    key_error(path, "cannot open it: " + std::string(std::strerror(errno)),
              "run the audit's writer (the broker) as the key's owner");
  }
  return key_from(fd.get(), path);
}

std::optional<ChainKey> read_chain_key(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    return std::nullopt;
  }
  return key_from(fd.get(), path);
}

}  // namespace sandshim::audit
