#include "engine/engine_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cctype>
#include <chrono>

#include "common/paths.hpp"
#include "common/sha256.hpp"

namespace sandshim::engine {

namespace fs = std::filesystem;

namespace {

constexpr int64_t k_max_uncapped_slots = 4096;

// "tcp://10.0.0.2:2376" -> "tcp___10.0.0.2_2376-1a2b3c4d": readable, and distinct per endpoint.
std::string directory_name(const std::string& endpoint) {
  std::string name;
  for (char c : endpoint) {
    bool plain = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-';
    name += plain ? c : '_';
  }
  return name.substr(0, 64) + "-" + sha256_hex(endpoint).substr(0, 8);
}

// The slot at `path` locked for this descriptor's life, or an invalid descriptor when held.
UniqueFd lock_slot(const fs::path& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.valid() && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    fd.reset();
  }
  return fd;
}

}  // namespace

fs::path engine_slots_root() {
  return xdg_directory("state") / "sandshim" / "engines";
}

EngineSlots::EngineSlots(const fs::path& root, const std::string& endpoint)
    : m_dir(root / directory_name(endpoint)) {}

int64_t EngineSlots::load() const {
  int64_t held = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(m_dir, ec)) {
    if (entry.path().filename().string().starts_with("slot-") &&
        !lock_slot(entry.path(), O_RDONLY).valid()) {
      ++held;
    }
  }
  return held;
}

UniqueFd EngineSlots::take(int64_t cap) const {
  std::error_code ec;
  fs::create_directories(m_dir, ec);
  const int64_t slots = cap > 0 ? cap : k_max_uncapped_slots;
  for (int64_t i = 0; i < slots; ++i) {
    if (UniqueFd fd = lock_slot(m_dir / ("slot-" + std::to_string(i)), O_RDWR | O_CREAT);
        fd.valid()) {
      return fd;
    }
  }
  return UniqueFd();
}

bool EngineSlots::down(int64_t retry_ms) const {
  struct stat st {};
  if (::stat((m_dir / "down").c_str(), &st) != 0) {
    return false;
  }
  auto marked =
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return now - marked < std::chrono::milliseconds(retry_ms);
}

void EngineSlots::mark_down() const {
  std::error_code ec;
  fs::create_directories(m_dir, ec);
  UniqueFd fd(::open((m_dir / "down").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.valid()) {
    ::futimens(fd.get(), nullptr);  // now: the retry interval starts again
  }
}

void EngineSlots::mark_up() const {
  std::error_code ec;
  fs::remove(m_dir / "down", ec);
}

}  // namespace sandshim::engine
