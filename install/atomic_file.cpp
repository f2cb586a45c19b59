#include "install/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/io.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& call, const fs::path& path) {
  throw Fatal(call + " " + quoted(path.string()) + " failed: " + std::strerror(errno));
}

// A temporary file that disappears unless it was renamed into place.
class TempFile {
 public:
  explicit TempFile(const fs::path& target) {
    std::string pattern =
        (target.parent_path() / ("." + target.filename().string() + ".sandshim-XXXXXX")).string();
    m_fd.reset(::mkostemp(pattern.data(), O_CLOEXEC));
    if (!m_fd.valid()) {
      fail("mkstemp in", target.parent_path());
    }
    m_path = pattern;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!m_path.empty()) {
      ::unlink(m_path.c_str());
    }
  }

  void write(std::string_view content) {
    if (!write_all(m_fd.get(), content)) {
      fail("write", m_path);
    }
  }

  void commit(const fs::path& target, mode_t mode) {
    if (::fchmod(m_fd.get(), mode) != 0) {
      fail("fchmod", m_path);
    }
    if (::fsync(m_fd.get()) != 0) {
      fail("fsync", m_path);
    }
    m_fd.reset();
    if (::rename(m_path.c_str(), target.c_str()) != 0) {
      fail("rename to", target);
    }
    m_path.clear();
  }

 private:
  UniqueFd m_fd;
  fs::path m_path;
};

mode_t new_file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// The file a write lands in: the target of a symlink, so the link itself survives.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    fs::path target = fs::read_symlink(path, ec);
    return target.is_absolute() ? resolved(target) : resolved(path.parent_path() / target);
  }
  return path;
}

}  // namespace

std::optional<std::string> read_file(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    fail("open", path);
  }
  std::optional<std::string> content = read_to_end(fd.get());
  if (!content) {
    fail("read", path);
  }
  return content;
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  fs::path target = resolved(path);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    throw Fatal("cannot create " + quoted(target.parent_path().string()) + ": " + ec.message());
  }
  struct stat existing {};
  mode_t mode = ::stat(target.c_str(), &existing) == 0 ? existing.st_mode & 07777 : new_file_mode();
  TempFile temp(target);
  temp.write(content);
  temp.commit(target, mode);
}

}  // namespace sandshim::install
