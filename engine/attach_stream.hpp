#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/reply.hpp"

namespace sandshim::engine {

// Which of the container's streams a chunk of output belongs to.
enum class Channel : uint8_t { stdin_channel = 0, stdout_channel = 1, stderr_channel = 2 };

struct Output {
  Channel channel = Channel::stdout_channel;
  std::string data;
};

// Docker's multiplexed attach stream without a TTY: frames of an 8-byte header (the channel,
// three zero bytes, the payload's length big-endian) and the payload. With a TTY the stream is
// raw and all of it is stdout. Bytes may arrive split anywhere.
class FrameDecoder {
 public:
  explicit FrameDecoder(bool raw) : m_raw(raw) {}

  // Appends the output in `bytes` to `out`, merging a channel's adjacent chunks.
  void feed(std::string_view bytes, std::vector<Output>& out);
  // A header that is not one of docker's: the stream cannot be read further.
  bool malformed() const { return m_malformed; }
  // Whether a frame was left incomplete (at the end of the stream: it was cut).
  bool mid_frame() const { return !m_header.empty() || m_left > 0; }

 private:
  void emit(Channel channel, std::string_view data, std::vector<Output>& out) const;

  bool m_raw;
  bool m_malformed = false;
  std::string m_header;  // a header's first bytes, while the rest has not arrived
  Channel m_channel = Channel::stdout_channel;
  uint32_t m_left = 0;  // payload bytes of the current frame still to come
};

// A container's hijacked attach connection, read and written from the caller's poll loop:
// poll fd() for input (and for output while stdin has bytes pending). Move-only.
class AttachStream {
 public:
  AttachStream();
  AttachStream(AttachStream&&) noexcept;
  AttachStream& operator=(AttachStream&&) noexcept;
  ~AttachStream();

  // Whether the engine switched the connection to the stream; reply() says why not.
  bool attached() const;
  const Reply& reply() const { return m_reply; }
  int fd() const;
  // The output that arrived, without blocking; at most about `max_bytes` of it, so a caller
  // whose readers are slow keeps the rest in the socket (bounded memory, backpressure).
  std::vector<Output> read_available(size_t max_bytes = SIZE_MAX);
  // Writes what it can of `data` to the container's stdin without blocking; bytes written.
  size_t write_some(std::string_view data);
  // Whether a write failed for good (the container's stdin is closed), not for a full socket.
  bool stdin_broken() const { return m_stdin_broken; }
  // Ends the container's stdin (EOF), keeping its output open.
  void close_stdin();
  // Whether the container's output ended (the engine closed the stream, or it broke).
  bool ended() const { return m_ended; }
  bool malformed() const { return m_decoder.malformed(); }

 private:
  friend class ApiClient;
  struct State;
  AttachStream(std::unique_ptr<State> state, Reply reply, bool tty);

  std::unique_ptr<State> m_state;
  Reply m_reply;
  FrameDecoder m_decoder{false};
  bool m_ended = false;
  bool m_stdin_broken = false;
};

}  // namespace sandshim::engine
