#include "common/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

namespace sandshim {

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = retry_on_eintr([&] { return ::write(fd, data.data(), data.size()); });
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool write_all_waiting(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = retry_on_eintr([&] { return ::write(fd, data.data(), data.size()); });
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd ready = {fd, POLLOUT, 0};
      ::poll(&ready, 1, -1);  // an EINTR here only loops back to the write
    } else {
      return false;
    }
  }
  return true;
}

std::optional<std::string> read_to_end(int fd, size_t limit) {
  std::string text;
  std::array<char, 65536> buffer;  // not zeroed: read() fills what is used
  while (text.size() <= limit) {
    size_t room = limit - text.size();
    size_t want = room >= buffer.size() ? buffer.size() : room + 1;
    ssize_t n = retry_on_eintr([&] { return ::read(fd, buffer.data(), want); });
    if (n < 0) {
      return std::nullopt;
    }
    if (n == 0) {
      break;
    }
    text.append(buffer.data(), static_cast<size_t>(n));
  }
  return text;
}

std::optional<std::string> read_file_text(const std::string& path, FileRead how) {
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (how.follow_link ? 0 : O_NOFOLLOW);
  int fd = retry_on_eintr([&] { return ::open(path.c_str(), flags); });
  if (fd < 0) {
    return std::nullopt;
  }
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    text = read_to_end(fd, how.max_bytes);
  }
  ::close(fd);
  return text && text->size() <= how.max_bytes ? text : std::nullopt;
}

}  // namespace sandshim
