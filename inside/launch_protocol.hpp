#pragma once

// The one exchange between the shim and the launcher of a warm container (inside/launch.cpp):
// the launcher says hello with its token, the shim sends one Request with the command's stdin,
// stdout and stderr as SCM_RIGHTS, the launcher answers one Status when the command has ended.
// Plain structs of fixed-size integers: both ends run on the same machine.

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace sandshim::launch {

inline constexpr const char* k_binary_name = "sandshim-launch";
// Where a warm container sees the launcher (read-only). Its socket is in the container's own
// /tmp, which the host reaches as /proc/PID/root/tmp: only the container's user and root may
// (ptrace access rules), and nothing the container writes lands on the host's disk.
inline constexpr const char* k_binary_in_container = "/.sandshim-launch";
inline constexpr const char* k_socket_in_container = "/tmp/.sandshim-launch.sock";
// The token comes in the environment (only the container's user and root can read it, where
// argv is visible to every user), and is removed before the command starts.
inline constexpr const char* k_token_variable = "SANDSHIM_LAUNCH_TOKEN";
// Through a broker (run/broker_launch.hpp): the socket in a directory of the broker's, mounted
// here, and the one uid the launcher admits (the broker's: not the container's own, which the
// caller's other processes share). Unset: /tmp's socket, the container's user and root.
inline constexpr const char* k_socket_variable = "SANDSHIM_LAUNCH_SOCKET";
inline constexpr const char* k_admit_variable = "SANDSHIM_LAUNCH_ADMIT";
inline constexpr const char* k_broker_dir_in_container = "/.sandshim/launch";
inline constexpr const char* k_broker_socket_in_container = "/.sandshim/launch/launch.sock";

inline constexpr uint32_t k_magic = 0x53534c31;  // "SSL1", and the protocol's version
inline constexpr size_t k_token_size = 32;       // hex characters
inline constexpr uint32_t k_max_payload = 8u << 20;
inline constexpr int k_fd_count = 3;  // stdin, stdout, stderr

// Launcher -> shim, as soon as the shim connects: proves it is the container's own launcher.
struct Hello {
  uint32_t magic;
  char token[k_token_size];
};

// Shim -> launcher, with the fds; then `payload_bytes` of NUL-terminated strings: the cwd, argc
// arguments, envc NAME=VALUE entries.
struct Request {
  uint32_t magic;
  uint32_t argc;
  uint32_t envc;
  uint32_t payload_bytes;
};

// Launcher -> shim when the command ended: its exit code, or the signal that killed it.
struct Status {
  uint32_t magic;
  int32_t exited;  // 1: value is the exit code; 0: value is the signal
  int32_t value;
};

// Moves all `size` bytes with `step` (one send or read), retrying on EINTR; false on EOF or error.
template <typename Step>
bool transfer_all(char* bytes, size_t size, Step step) {
  while (size > 0) {
    ssize_t n = step(bytes, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Sends all of `data` on a socket (no SIGPIPE: a peer that went away is an error, not a signal).
inline bool send_all(int fd, const void* data, size_t size) {
  return transfer_all(const_cast<char*>(static_cast<const char*>(data)), size,
                      [fd](char* b, size_t n) { return ::send(fd, b, n, MSG_NOSIGNAL); });
}

// Reads exactly `size` bytes into `data`.
inline bool read_all(int fd, void* data, size_t size) {
  return transfer_all(static_cast<char*>(data), size,
                      [fd](char* b, size_t n) { return ::read(fd, b, n); });
}

}  // namespace sandshim::launch
