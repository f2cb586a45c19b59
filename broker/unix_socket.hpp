#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace sandshim::broker {

// Who is on the other end of a unix socket, as the kernel recorded it at connect(2).
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// A listening stream socket at `path` (a stale socket file is replaced) with that mode.
UniqueFd listen_unix(const std::filesystem::path& path, mode_t mode, int backlog);

// A connected socket, or nullopt with errno set when nothing listens there.
std::optional<UniqueFd> connect_unix(const std::filesystem::path& path);

// SO_PEERCRED of a connected socket; throws Fatal naming the call.
PeerCredentials peer_credentials(int socket_fd);

// One received frame: its payload and the descriptors that came with it.
struct Frame {
  std::string payload;
  std::vector<UniqueFd> fds;
};

enum class ReadStatus { ok, closed, timed_out, broken };

struct ReadResult {
  ReadStatus status = ReadStatus::broken;
  Frame frame;
  std::string error;  // for broken: which rule or call failed
};

// Reads one frame (header, then payload), waiting at most timeout_ms (-1: forever) in total.
// Descriptors beyond max_fds, or any on a frame that expects none, break the frame.
ReadResult read_frame(int socket_fd, int timeout_ms, size_t max_fds);

// Writes one frame, with `fds` attached to its first byte; false when the peer is gone.
bool send_frame(int socket_fd, const std::string& payload, const std::vector<int>& fds = {});

}  // namespace sandshim::broker
