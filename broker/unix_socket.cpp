#include "broker/unix_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "broker/protocol.hpp"
#include "common/error.hpp"
#include "common/fd_passing.hpp"
#include "common/io.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

sockaddr_un address_of(const fs::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof address.sun_path) {
    throw Fatal("the socket path " + quoted(path.string()) + " is too long for a unix socket");
  }
  std::memcpy(address.sun_path, path.c_str(), path.native().size());
  return address;
}

UniqueFd stream_socket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    int error = errno;
    // A seccomp filter around the caller: Claude Code's own sandbox refuses every unix socket.
    throw Fatal(std::string("socket(AF_UNIX) failed: ") + std::strerror(error) +
                (error == EPERM ? " (a sandbox around this process refuses unix sockets: Claude "
                                  "Code's sandbox does unless sandbox.network.allowAllUnixSockets; "
                                  "in broker mode `sandshim install agent claude` adds it)"
                                : ""));
  }
  return fd;
}

// Waits until fd is readable or the deadline (monotonic ms, -1: none) passes.
bool wait_readable(int fd, int64_t deadline_ms) {
  while (true) {
    int timeout = -1;
    if (deadline_ms >= 0) {
      timeout = static_cast<int>(std::max<int64_t>(0, deadline_ms - monotonic_ms()));
    }
    pollfd pfd{fd, POLLIN, 0};
    int n = ::poll(&pfd, 1, timeout);
    if (n > 0) {
      return true;
    }
    if (n == 0 || errno != EINTR) {
      return false;
    }
  }
}

// recv into buffer, collecting the descriptors that come with it; more than max_fds in the
// frame, or any the kernel dropped, make fds_ok false.
ssize_t receive_some(int fd, char* buffer, size_t size, std::vector<UniqueFd>& fds, size_t max_fds,
                     bool& fds_ok) {
  Received received = receive_with_fds(fd, buffer, size, MSG_DONTWAIT);
  for (size_t i = 0; i < received.fd_count; ++i) {
    fds.emplace_back(received.fds[i]);
  }
  fds_ok = fds_ok && received.complete && fds.size() <= max_fds;
  return received.bytes;
}

// Fills buffer completely; the status says why it could not.
ReadStatus read_exact(int fd, char* buffer, size_t size, int64_t deadline_ms,
                      std::vector<UniqueFd>& fds, size_t max_fds, bool& fds_ok) {
  size_t done = 0;
  while (done < size) {
    if (!wait_readable(fd, deadline_ms)) {
      return ReadStatus::timed_out;
    }
    ssize_t n = receive_some(fd, buffer + done, size - done, fds, max_fds, fds_ok);
    if (n == 0) {
      return ReadStatus::closed;
    }
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
      return ReadStatus::closed;
    }
    done += n > 0 ? static_cast<size_t>(n) : 0;
  }
  return ReadStatus::ok;
}

}  // namespace

UniqueFd listen_unix(const fs::path& path, mode_t mode, int backlog) {
  sockaddr_un address = address_of(path);
  UniqueFd fd = stream_socket();
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw Fatal("cannot listen on " + quoted(path.string()) + ": bind failed: " +
                std::strerror(errno) + "; create its directory or pick another --socket");
  }
  if (::chmod(path.c_str(), mode) != 0 || ::listen(fd.get(), backlog) != 0) {
    throw Fatal("cannot listen on " + quoted(path.string()) + ": " + std::strerror(errno));
  }
  return fd;
}

std::optional<UniqueFd> connect_unix(const fs::path& path) {
  sockaddr_un address = address_of(path);
  UniqueFd fd = stream_socket();
  if (retry_on_eintr([&] {
        return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address);
      }) != 0) {
    return std::nullopt;
  }
  return fd;
}

PeerCredentials peer_credentials(int socket_fd) {
  ucred credentials{};
  socklen_t size = sizeof credentials;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    throw Fatal(std::string("getsockopt(SO_PEERCRED) failed: ") + std::strerror(errno));
  }
  return {credentials.pid, credentials.uid, credentials.gid};
}

ReadResult read_frame(int socket_fd, int timeout_ms, size_t max_fds) {
  int64_t deadline = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
  ReadResult result;
  bool fds_ok = true;
  unsigned char header[4] = {};
  result.status = read_exact(socket_fd, reinterpret_cast<char*>(header), sizeof header, deadline,
                             result.frame.fds, max_fds, fds_ok);
  if (result.status != ReadStatus::ok) {
    return result;
  }
  auto size = parse_frame_header(header);
  if (!size) {
    return {ReadStatus::broken, {}, "frame length is 0 or over the limit"};
  }
  result.frame.payload.resize(*size);
  result.status = read_exact(socket_fd, result.frame.payload.data(), *size, deadline,
                             result.frame.fds, max_fds, fds_ok);
  if (result.status == ReadStatus::ok && !fds_ok) {
    return {ReadStatus::broken, {}, "unexpected file descriptors with a frame"};
  }
  return result;
}

bool send_frame(int socket_fd, const std::string& payload, const std::vector<int>& fds) {
  std::string bytes = frame_header(payload.size()) + payload;
  size_t sent = 0;
  while (sent < bytes.size()) {
    const bool first = sent == 0;  // the descriptors go with the frame's first bytes
    ssize_t n = send_with_fds(socket_fd, bytes.data() + sent, bytes.size() - sent,
                              first ? fds.data() : nullptr, first ? fds.size() : 0);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace sandshim::broker
