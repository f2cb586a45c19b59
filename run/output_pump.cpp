#include "run/output_pump.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace sandshim::shim {

void Tail::append(const char* data, size_t size) {
  if (m_capacity == 0) {
    return;
  }
  m_buffer.append(data, size);
  if (m_buffer.size() > 2 * m_capacity) {
    m_buffer.erase(0, m_buffer.size() - m_capacity);
  }
}

std::string Tail::str() const {
  return m_buffer.size() > m_capacity ? m_buffer.substr(m_buffer.size() - m_capacity) : m_buffer;
}

bool StreamRelay::read_some() {
  char buffer[16384];
  ssize_t n = ::read(m_from, buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    return true;
  }
  if (n <= 0) {
    m_from_open = false;
    return false;
  }
  auto size = static_cast<size_t>(n);
  m_bytes += n;
  m_tail.append(buffer, size);
  m_last.append(buffer, size);
  constexpr size_t k_head_bytes = 4096;
  if (m_head.size() < k_head_bytes) {
    m_head.append(buffer, std::min(size, k_head_bytes - m_head.size()));
  }
  if (!m_to_broken) {
    m_pending.append(buffer, size);
  }
  return true;
}

void StreamRelay::write_some() {
  // A pipe that polls writable has room for at least one page: a write of that size never blocks.
  constexpr size_t k_chunk = 4096;
  size_t size = std::min(k_chunk, m_pending.size());
  ssize_t n = ::write(m_to, m_pending.data(), size);
  if (n > 0) {
    m_pending.erase(0, static_cast<size_t>(n));
  } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
    // The caller stopped reading (EPIPE): keep draining the client so it is never stuck.
    m_to_broken = true;
    m_pending.clear();
  }
}

void StreamRelay::flush() {
  while (has_pending() && !m_to_broken) {
    pollfd fd{m_to, POLLOUT, 0};
    if (::poll(&fd, 1, 2000) <= 0) {
      break;
    }
    write_some();
  }
}

}  // namespace sandshim::shim
