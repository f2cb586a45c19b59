#include "engine/tls_connect.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/process.hpp"

namespace sandshim::engine::detail {

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
using Tcp = net::ip::tcp;
using TlsStream = ssl::stream<Tcp::socket>;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

constexpr size_t k_relay_chunk = 64 << 10;

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

// The client's side of mutual TLS: its certificate and key, and only ca.pem's servers.
void configure(ssl::context& context, const std::filesystem::path& dir) {
  context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  context.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  context.load_verify_file((dir / "ca.pem").string());
  context.use_certificate_chain_file((dir / "cert.pem").string());
  context.use_private_key_file((dir / "key.pem").string(), ssl::context::pem);
}

// Closes every descriptor but `keep` (the relay must not hold the caller's pipes or another
// connection's end open).
void close_all_but(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned first = 0;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > first) {
      ::syscall(SYS_close_range, first, static_cast<unsigned>(fd) - 1, 0U);
    }
    first = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, first, ~0U, 0U);
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

// The relay's process: no signals (the caller's terminal must not end it mid-answer), no
// descriptors but its two, no controlling terminal; it ends when both directions have.
[[noreturn]] void run_relay(net::io_context& io, TlsStream& tls, int local_fd) {
  ::setsid();
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  close_all_but({tls.next_layer().native_handle(), local_fd});
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) {
    ::dup2(null, fd);
  }
  io.notify_fork(net::execution_context::fork_child);
  net::local::stream_protocol::socket local(io);
  ErrorCode error;
  local.assign(net::local::stream_protocol(), local_fd, error);
  if (!error) {
    Relay relay(io, tls, local);
    relay.start();
    io.restart();
    io.run();
  }
  ::_exit(0);
}

// Hands the connection to a relay process (forked twice: nobody waits for it, no zombie) and
// returns the local end.
TlsConnection hand_to_relay(net::io_context& io, TlsStream& tls) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return {-1, Fault::unreachable, std::string("socketpair: ") + std::strerror(errno)};
  }
  io.notify_fork(net::execution_context::fork_prepare);
  pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) {
      run_relay(io, tls, pair[1]);
    }
    ::_exit(0);
  }
  io.notify_fork(net::execution_context::fork_parent);
  ::close(pair[1]);
  if (child < 0) {
    ::close(pair[0]);
    return {-1, Fault::unreachable, std::string("fork: ") + std::strerror(errno)};
  }
  wait_for(child);
  return {pair[0], Fault::none, ""};
}

TlsConnection failure(Fault fault, std::string detail) {
  return {-1, fault, std::move(detail)};
}

// Resolves the host and connects to one of its addresses before the deadline; the failure, or
// nullopt.
std::optional<TlsConnection> connect_tcp(net::io_context& io, TlsStream& tls,
                                         const TlsEndpoint& endpoint, Clock::time_point deadline) {
  ErrorCode result;
  bool done = false;
  Tcp::resolver resolver(io);
  Tcp::resolver::results_type addresses;
  resolver.async_resolve(endpoint.host, endpoint.port,
                         [&](const ErrorCode& error, Tcp::resolver::results_type found) {
                           result = error;
                           addresses = std::move(found);
                           done = true;
                         });
  if (!run_until(io, tls.next_layer(), deadline, done) || result) {
    return failure(done ? Fault::unreachable : Fault::timeout,
                   "resolving " + endpoint.host + ": " + (done ? result.message() : "timed out"));
  }
  done = false;
  net::async_connect(tls.next_layer(), addresses,
                     [&](const ErrorCode& error, const Tcp::endpoint&) {
                       result = error;
                       done = true;
                     });
  if (!run_until(io, tls.next_layer(), deadline, done) || result) {
    return failure(done ? Fault::unreachable : Fault::timeout,
                   done ? result.message() : "connecting timed out");
  }
  return std::nullopt;
}

// The TLS handshake, the server's certificate checked for the host (named by SNI when it is not
// an address) before the deadline; the failure, or nullopt.
std::optional<TlsConnection> handshake(net::io_context& io, TlsStream& tls,
                                       const TlsEndpoint& endpoint, Clock::time_point deadline) {
  tls.set_verify_callback(ssl::host_name_verification(endpoint.host));
  ErrorCode not_an_address;
  net::ip::make_address(endpoint.host, not_an_address);
  if (not_an_address) {  // SNI names a host, never an address (RFC 6066)
    ::SSL_ctrl(tls.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(endpoint.host.c_str()));
  }
  ErrorCode result;
  bool done = false;
  tls.async_handshake(ssl::stream_base::client, [&](const ErrorCode& error) {
    result = error;
    done = true;
  });
  if (!run_until(io, tls.next_layer(), deadline, done) || result) {
    return failure(done ? Fault::unreachable : Fault::timeout,
                   "TLS with " + endpoint.host + ": " + (done ? result.message() : "timed out"));
  }
  return std::nullopt;
}

}  // namespace

TlsConnection connect_tls(const TlsEndpoint& endpoint, Clock::time_point deadline) {
  ssl::context context(ssl::context::tls_client);
  try {
    configure(context, endpoint.cert_dir);
  } catch (const boost::system::system_error& e) {
    return failure(Fault::unreachable, "the TLS files in " + endpoint.cert_dir.string() +
                                           " (ca.pem, cert.pem, key.pem): " + e.what());
  }
  net::io_context io;
  TlsStream tls(io, context);
  if (std::optional<TlsConnection> failed = connect_tcp(io, tls, endpoint, deadline)) {
    return *failed;
  }
  if (std::optional<TlsConnection> failed = handshake(io, tls, endpoint, deadline)) {
    return *failed;
  }
  return hand_to_relay(io, tls);
}

}  // namespace sandshim::engine::detail
