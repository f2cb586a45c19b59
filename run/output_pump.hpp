#pragma once

#include <cstdint>
#include <string>

namespace sandshim::shim {

// Keeps the last `capacity` bytes of a stream in bounded memory.
class Tail {
 public:
  explicit Tail(size_t capacity) : m_capacity(capacity) {}
  void append(const char* data, size_t size);
  std::string str() const;

 private:
  size_t m_capacity;
  std::string m_buffer;
};

// Moves one stream from the engine client to the caller as it comes: counts it, keeps its tail,
// and applies backpressure instead of buffering without bound.
class StreamRelay {
 public:
  StreamRelay(int from_fd, int to_fd, size_t tail_capacity)
      : m_from(from_fd), m_to(to_fd), m_tail(tail_capacity) {}

  static constexpr size_t k_max_pending = 64 * 1024;

  int from_fd() const { return m_from_open ? m_from : -1; }
  int to_fd() const { return m_to; }
  bool wants_input() const { return m_from_open && m_pending.size() < k_max_pending; }
  bool has_pending() const { return !m_pending.empty() && !m_held; }
  bool at_end() const { return !m_from_open; }

  // Reads what the client wrote; false on end of stream.
  bool read_some();
  // Writes pending bytes without blocking on a full pipe (called when the caller's fd is writable).
  void write_some();
  // Writes everything still pending, e.g. before exit.
  void flush();

  // Holding keeps bytes back (the engine's own error lines are replaced by one clear line).
  void hold() { m_held = true; }
  void release_hold() { m_held = false; }
  void discard_pending() { m_pending.clear(); }
  const std::string& pending() const { return m_pending; }

  int64_t bytes() const { return m_bytes; }
  // The first bytes of the stream, kept to recognise the engine's own errors after the fact.
  const std::string& head() const { return m_head; }
  std::string tail() const { return m_tail.str(); }
  // The last bytes of the stream whatever audit.tail_bytes says, to recognise an engine that
  // failed after the container started.
  std::string last() const { return m_last.str(); }

 private:
  int m_from;
  int m_to;
  bool m_from_open = true;
  bool m_to_broken = false;
  bool m_held = false;
  std::string m_pending;
  std::string m_head;
  int64_t m_bytes = 0;
  Tail m_tail;
  Tail m_last{512};
};

}  // namespace sandshim::shim
