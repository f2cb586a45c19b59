#pragma once

#include <dirent.h>
#include <unistd.h>

#include <memory>
#include <utility>

namespace sandshim {

// Owns one file descriptor; closing it is never forgotten on an early return.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : m_fd(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(std::exchange(other.m_fd, -1));
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const { return m_fd; }
  bool valid() const { return m_fd >= 0; }
  int release() { return std::exchange(m_fd, -1); }
  void reset(int fd = -1) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = fd;
  }

 private:
  int m_fd = -1;
};

// Owns an open directory stream (opendir, fdopendir: then the descriptor is the stream's).
struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using UniqueDir = std::unique_ptr<DIR, DirCloser>;

// A pipe whose both ends are close-on-exec, so nothing leaks into spawned programs.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
Pipe make_pipe();

}  // namespace sandshim
