// sandshim-tls: one mutual-TLS connection to a remote engine, relayed to a local socket
// (protocol.hpp). The client presents CERT_DIR/cert.pem (with key.pem) and accepts only a server
// whose certificate CERT_DIR/ca.pem signed for HOST. Started by engine/tls_connect.cpp with every
// signal blocked, no terminal and no descriptors but its two, so the caller's terminal cannot end
// it mid-answer; it ends when both directions of the stream have.
#include <openssl/ssl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "engine/tls_relay/protocol.hpp"

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace protocol = sandshim::engine::tls_relay;
using Tcp = net::ip::tcp;
using TlsStream = ssl::stream<Tcp::socket>;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

constexpr size_t k_relay_chunk = 64 << 10;

struct Target {
  std::string host;
  std::string port;
  std::string cert_dir;
  Clock::time_point deadline;
};

// What went wrong before the relay could start: its protocol word and a detail for the message.
struct Failure {
  const char* word;
  std::string detail;
};

// The one status line on fd 4, then fd 4 closed: the caller reads until end of file.
void report(std::string_view word, std::string_view detail) {
  std::string line(word);
  if (!detail.empty()) {
    line += ' ';
    line += detail;
  }
  line += '\n';
  for (std::string_view rest = line; !rest.empty();) {
    ssize_t n = ::write(protocol::k_status_fd, rest.data(), rest.size());
    if (n <= 0) {
      break;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  ::close(protocol::k_status_fd);
}

// Runs the operation just started on `io` until it completes or `deadline` passes; false on
// the deadline (the operation is cancelled by closing the socket).
bool run_until(net::io_context& io, Tcp::socket& socket, Clock::time_point deadline,
               const bool& done) {
  io.restart();
  io.run_until(deadline);
  if (done) {
    return true;
  }
  ErrorCode ignored;
  socket.close(ignored);
  io.restart();
  io.run();
  return false;
}

Failure failed(bool done, std::string what, const ErrorCode& result) {
  return {done ? protocol::k_unreachable : protocol::k_timeout,
          what + (done ? result.message() : "timed out")};
}

// The client's side of mutual TLS: its certificate and key, and only ca.pem's servers.
std::optional<Failure> configure(ssl::context& context, const std::string& dir) {
  try {
    context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    context.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    context.load_verify_file(dir + "/ca.pem");
    context.use_certificate_chain_file(dir + "/cert.pem");
    context.use_private_key_file(dir + "/key.pem", ssl::context::pem);
  } catch (const boost::system::system_error& e) {
    return Failure{protocol::k_unreachable,
                   "the TLS files in " + dir + " (ca.pem, cert.pem, key.pem): " + e.what()};
  }
  return std::nullopt;
}

// Resolves the host and connects to one of its addresses before the deadline.
std::optional<Failure> connect_tcp(net::io_context& io, TlsStream& tls, const Target& target) {
  ErrorCode result;
  bool done = false;
  Tcp::resolver resolver(io);
  Tcp::resolver::results_type addresses;
  resolver.async_resolve(target.host, target.port,
                         [&](const ErrorCode& error, Tcp::resolver::results_type found) {
                           result = error;
                           addresses = std::move(found);
                           done = true;
                         });
  if (!run_until(io, tls.next_layer(), target.deadline, done) || result) {
    return failed(done, "resolving " + target.host + ": ", result);
  }
  done = false;
  net::async_connect(tls.next_layer(), addresses,
                     [&](const ErrorCode& error, const Tcp::endpoint&) {
                       result = error;
                       done = true;
                     });
  if (!run_until(io, tls.next_layer(), target.deadline, done) || result) {
    return failed(done, "connecting: ", result);
  }
  return std::nullopt;
}

// The TLS handshake, the server's certificate checked for the host (named by SNI when it is not
// an address) before the deadline.
std::optional<Failure> handshake(net::io_context& io, TlsStream& tls, const Target& target) {
  tls.set_verify_callback(ssl::host_name_verification(target.host));
  ErrorCode not_an_address;
  net::ip::make_address(target.host, not_an_address);
  if (not_an_address) {  // SNI names a host, never an address (RFC 6066)
    ::SSL_ctrl(tls.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(target.host.c_str()));
  }
  ErrorCode result;
  bool done = false;
  tls.async_handshake(ssl::stream_base::client, [&](const ErrorCode& error) {
    result = error;
    done = true;
  });
  if (!run_until(io, tls.next_layer(), target.deadline, done) || result) {
    return failed(done, "TLS with " + target.host + ": ", result);
  }
  return std::nullopt;
}

// Copies bytes both ways between the TLS stream and the local end until both directions ended.
class Relay {
 public:
  Relay(net::io_context& io, TlsStream& tls, net::local::stream_protocol::socket& local)
      : m_io(io), m_tls(tls), m_local(local) {}

  void start() {
    from_engine();
    to_engine();
  }

 private:
  void from_engine() {
    m_tls.async_read_some(net::buffer(m_in), [this](const ErrorCode& error, size_t n) {
      if (error) {
        ErrorCode ignored;
        m_local.shutdown(net::socket_base::shutdown_send, ignored);
        return;
      }
      net::async_write(m_local, net::buffer(m_in.data(), n),
                       [this](const ErrorCode& failed, size_t) {
                         if (failed) {
                           m_io.stop();
                         } else {
                           from_engine();
                         }
                       });
    });
  }

  // The caller's end of the stream closes the engine's input the way docker's client does:
  // the engine reads end-of-stream (attach: the container's stdin closes), the answer still comes.
  void to_engine() {
    m_local.async_read_some(net::buffer(m_out), [this](const ErrorCode& error, size_t n) {
      if (error) {
        ErrorCode ignored;
        m_tls.next_layer().shutdown(net::socket_base::shutdown_send, ignored);
        return;
      }
      net::async_write(m_tls, net::buffer(m_out.data(), n),
                       [this](const ErrorCode& failed, size_t) {
                         if (!failed) {
                           to_engine();
                         }
                       });
    });
  }

  net::io_context& m_io;
  TlsStream& m_tls;
  net::local::stream_protocol::socket& m_local;
  std::array<char, k_relay_chunk> m_in{};
  std::array<char, k_relay_chunk> m_out{};
};

void relay(net::io_context& io, TlsStream& tls) {
  net::local::stream_protocol::socket local(io);
  ErrorCode error;
  local.assign(net::local::stream_protocol(), protocol::k_local_fd, error);
  if (error) {
    return;
  }
  Relay relay(io, tls, local);
  relay.start();
  io.restart();
  io.run();
}

std::optional<Target> parse(int argc, char** argv) {
  long long ms = -1;
  if (argc == 5) {
    std::string_view text(argv[4]);
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (error != std::errc() || end != text.data() + text.size() || ms < 0) {
      ms = -1;
    }
  }
  if (ms < 0) {
    return std::nullopt;
  }
  return Target{argv[1], argv[2], argv[3], Clock::now() + std::chrono::milliseconds(ms)};
}

// Connects, reports, relays. Any failure is reported on fd 4 before the exit.
int serve(const Target& target) {
  ssl::context context(ssl::context::tls_client);
  if (std::optional<Failure> failure = configure(context, target.cert_dir)) {
    report(failure->word, failure->detail);
    return 1;
  }
  net::io_context io;
  TlsStream tls(io, context);
  std::optional<Failure> failure = connect_tcp(io, tls, target);
  if (!failure) {
    failure = handshake(io, tls, target);
  }
  if (failure) {
    report(failure->word, failure->detail);
    return 1;
  }
  report(protocol::k_ok, "");
  relay(io, tls);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  std::optional<Target> target = parse(argc, argv);
  if (!target) {
    std::fprintf(stderr,
                 "usage: %s HOST PORT CERT_DIR MILLISECONDS (fd 3: the local end, fd 4: "
                 "the status); started by sandshim, not by hand\n",
                 protocol::k_program);
    report(protocol::k_unreachable, "sandshim-tls: bad arguments");
    return 2;
  }
  return serve(*target);
}
