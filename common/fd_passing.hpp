#pragma once

// Descriptors passed over a unix socket (SCM_RIGHTS): the one implementation for every sender
// and receiver (the broker's frames, the launcher's header). Header-only and libc-only, so the
// static programs inside the containers (inside/) use it too; no allocation, so a forked child
// may call it.

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace sandshim {

inline constexpr size_t k_max_passed_fds = 16;

// Sends `size` bytes with `count` descriptors attached in one sendmsg (EINTR retried, never
// SIGPIPE). More than k_max_passed_fds: nothing is sent, -1 with EINVAL.
inline ssize_t send_with_fds(int socket, const void* data, size_t size, const int* fds,
                             size_t count) {
  if (count > k_max_passed_fds) {
    errno = EINVAL;
    return -1;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_max_passed_fds)] = {};
  iovec io{const_cast<void*>(data), size};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  if (count > 0) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * count);
    std::memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
  }
  ssize_t sent = 0;
  while ((sent = ::sendmsg(socket, &message, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return sent;
}

// What one recvmsg brought: its byte count (or -1, errno set), and the descriptors attached to
// it (close-on-exec, the caller's to close). `complete` is false when the kernel dropped some,
// or more than k_max_passed_fds came (those beyond are closed here).
struct Received {
  ssize_t bytes = -1;
  int fds[k_max_passed_fds] = {};
  size_t fd_count = 0;
  bool complete = true;
};

// Descriptors of one SCM_RIGHTS header, into `received` while room is left; the rest closed.
inline void take_passed_fds(const cmsghdr* header, Received& received) {
  const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
  for (size_t i = 0; i < count; ++i) {
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
    if (received.fd_count < k_max_passed_fds) {
      received.fds[received.fd_count++] = fd;
    } else {
      ::close(fd);
      received.complete = false;
    }
  }
}

// One recvmsg of up to `size` bytes with `flags` (EINTR retried; MSG_CMSG_CLOEXEC always).
inline Received receive_with_fds(int socket, void* data, size_t size, int flags) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_max_passed_fds)] = {};
  iovec io{data, size};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  Received received;
  while ((received.bytes = ::recvmsg(socket, &message, flags | MSG_CMSG_CLOEXEC)) < 0 &&
         errno == EINTR) {
  }
  if (received.bytes < 0) {
    return received;
  }
  received.complete = (message.msg_flags & MSG_CTRUNC) == 0;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      take_passed_fds(header, received);
    }
  }
  return received;
}

}  // namespace sandshim
