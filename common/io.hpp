#pragma once

#include <cerrno>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim {

// Calls `call` again while it fails with EINTR (-1 and errno EINTR), so a signal handler that
// runs mid-call is never taken for an error; returns the last result, errno as that call left it.
template <typename Call>
auto retry_on_eintr(Call call) -> decltype(call()) {
  decltype(call()) result;
  do {
    result = call();
  } while (result == -1 && errno == EINTR);
  return result;
}

// Writes all of `data` to a blocking descriptor; false when a write fails or the other end is
// closed (errno from the write: EPIPE, with SIGPIPE ignored or blocked), whatever was written
// stays.
bool write_all(int fd, std::string_view data);

// write_all for a descriptor that may be non-blocking (a caller's terminal): on EAGAIN it waits in
// poll until the descriptor is writable, rather than failing.
bool write_all_waiting(int fd, std::string_view data);

// Reads fd to its end, at most `limit` + 1 bytes, so a caller sees an oversized input as
// `size() > limit`; nullopt when a read fails (errno set), what was read before is dropped.
std::optional<std::string> read_to_end(int fd, size_t limit = std::numeric_limits<size_t>::max());

// How read_file_text reads: at most max_bytes; follow_link false refuses a link at the path
// itself (O_NOFOLLOW), for a file a caller or a project could have put there.
struct FileRead {
  size_t max_bytes = size_t{1} << 20;
  bool follow_link = true;
};

// The whole text of the regular file at `path` (a /proc or cgroup file is one too); nullopt when
// it cannot be opened or read, is no regular file (a fifo would block) or holds more than
// max_bytes.
std::optional<std::string> read_file_text(const std::string& path, FileRead how = {});

}  // namespace sandshim
