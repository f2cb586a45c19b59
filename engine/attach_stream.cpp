#include "engine/attach_stream.hpp"

#include <sys/socket.h>

#include "engine/api_client.hpp"
#include "engine/connection.hpp"

namespace sandshim::engine {

namespace {

constexpr size_t k_header_bytes = 8;

uint32_t big_endian(std::string_view bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return value;
}

// Docker's stream header: channel 0–2, then three zero bytes.
bool valid_header(std::string_view header) {
  return static_cast<unsigned char>(header[0]) <= 2 && header[1] == 0 && header[2] == 0 &&
         header[3] == 0;
}

}  // namespace

void FrameDecoder::emit(Channel channel, std::string_view data, std::vector<Output>& out) const {
  if (data.empty()) {
    return;
  }
  if (!out.empty() && out.back().channel == channel) {
    out.back().data.append(data);
  } else {
    out.push_back(Output{channel, std::string(data)});
  }
}

void FrameDecoder::feed(std::string_view bytes, std::vector<Output>& out) {
  if (m_raw) {
    emit(Channel::stdout_channel, bytes, out);
    return;
  }
  while (!bytes.empty() && !m_malformed) {
    if (m_left > 0) {
      size_t n = std::min<size_t>(m_left, bytes.size());
      emit(m_channel, bytes.substr(0, n), out);
      m_left -= static_cast<uint32_t>(n);
      bytes.remove_prefix(n);
      continue;
    }
    size_t n = std::min(k_header_bytes - m_header.size(), bytes.size());
    m_header.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
    if (m_header.size() == k_header_bytes) {
      m_malformed = !valid_header(m_header);
      m_channel = static_cast<Channel>(m_header[0]);
      m_left = big_endian(std::string_view(m_header).substr(4));
      m_header.clear();
    }
  }
}

struct AttachStream::State {
  detail::Session session;
  detail::http::response_parser<detail::http::string_body> parser;
};

AttachStream::AttachStream() = default;
AttachStream::AttachStream(AttachStream&&) noexcept = default;
AttachStream& AttachStream::operator=(AttachStream&&) noexcept = default;
AttachStream::~AttachStream() = default;

AttachStream::AttachStream(std::unique_ptr<State> state, Reply reply, bool tty)
    : m_state(std::move(state)), m_reply(std::move(reply)), m_decoder(tty) {
  if (!attached()) {
    m_state.reset();
    m_ended = true;
  }
}

bool AttachStream::attached() const {
  return m_state != nullptr && (m_reply.status == 101 || m_reply.status == 200);
}

int AttachStream::fd() const {
  return m_state ? m_state->session.stream.socket().native_handle() : -1;
}

// What the header read left in the buffer is the stream's first bytes; everything read is decoded
// before returning, so nothing waits in the buffer while poll sees an empty socket.
std::vector<Output> AttachStream::read_available(size_t max_bytes) {
  std::vector<Output> out;
  size_t taken = 0;
  while (m_state && !m_decoder.malformed()) {
    auto& buffer = m_state->session.buffer;
    if (buffer.size() > 0) {
      auto data = buffer.data();
      m_decoder.feed(std::string_view(static_cast<const char*>(data.data()), data.size()), out);
      buffer.consume(data.size());
    }
    if (m_ended || taken >= max_bytes) {
      break;
    }
    detail::beast::error_code error;
    size_t n = m_state->session.stream.socket().read_some(buffer.prepare(64 << 10), error);
    buffer.commit(n);
    taken += n;
    if (error == detail::net::error::would_block) {
      break;
    }
    m_ended = error.failed() && n == 0;
  }
  return out;
}

size_t AttachStream::write_some(std::string_view data) {
  if (!m_state) {
    return 0;
  }
  detail::beast::error_code error;
  size_t n = m_state->session.stream.socket().write_some(
      detail::net::buffer(data.data(), data.size()), error);
  m_stdin_broken = m_stdin_broken || (error.failed() && error != detail::net::error::would_block &&
                                      error != detail::net::error::try_again);
  return n;
}

void AttachStream::close_stdin() {
  if (m_state) {
    detail::beast::error_code error;
    m_state->session.stream.socket().shutdown(detail::Protocol::socket::shutdown_send, error);
  }
}

AttachStream ApiClient::attach(const std::string& container, bool tty) const {
  auto state = std::make_unique<AttachStream::State>();
  auto request = detail::make_request(detail::http::verb::post,
                                      "/containers/" + detail::url_escape(container) +
                                          "/attach?stream=1&stdin=1&stdout=1&stderr=1");
  request.set(detail::http::field::connection, "Upgrade");
  request.set(detail::http::field::upgrade, "tcp");
  Reply reply = detail::open_stream(state->session, m_transport, request, m_timeout, state->parser,
                                    {101, 200});
  return AttachStream(std::move(state), std::move(reply), tty);
}

}  // namespace sandshim::engine
