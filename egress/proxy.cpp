#include "egress/proxy.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/io.hpp"
#include "common/strings.hpp"
#include "egress/request.hpp"

namespace sandshim::egress {

namespace asio = boost::asio;
using local_socket = asio::local::stream_protocol::socket;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t k_max_head = 64 * 1024;
constexpr size_t k_buffer = 64 * 1024;
constexpr auto k_setup_timeout = std::chrono::seconds(30);

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using Records = std::vector<ConnectionRecord>;

// One client connection: read the request, decide, connect, relay; its record is complete when
// the last handler lets go of it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(local_socket client, const AllowList& allow, Records& records)
      : m_client(std::move(client)),
        m_upstream(m_client.get_executor()),
        m_resolver(m_client.get_executor()),
        m_timer(m_client.get_executor()),
        m_allow(allow),
        m_records(records),
        m_started(steady_ms()) {
    m_record.start_ms = wall_ms();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    m_record.duration_ms = steady_ms() - m_started;
    m_records.push_back(m_record);
  }

  void start() {
    m_timer.expires_after(k_setup_timeout);
    m_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) {
        self->close();
      }
    });
    read_more(&Session::on_first_bytes);
  }

 private:
  std::string buffered() const {
    return {asio::buffers_begin(m_head.data()), asio::buffers_end(m_head.data())};
  }

  // Waits for at least one more byte from the client, then calls `next`.
  void read_more(void (Session::*next)()) {
    if (m_head.size() >= k_max_head) {
      m_record.reason = "the client's request is larger than the proxy reads";
      return close();
    }
    asio::async_read(m_client, m_head, asio::transfer_at_least(1),
                     [self = shared_from_this(), next](boost::system::error_code ec, size_t) {
                       if (ec) {
                         self->m_record.reason = "the client sent no complete request";
                         return self->close();
                       }
                       ((*self).*next)();
                     });
  }

  // SOCKS5 begins with its version byte; anything else is read as an HTTP proxy request.
  void on_first_bytes() {
    if (static_cast<uint8_t>(buffered().front()) == k_socks_version) {
      m_socks = true;
      m_record.method = "SOCKS5";
      return on_socks_greeting();
    }
    asio::async_read_until(m_client, m_head, "\r\n\r\n",
                           [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                             self->on_head(ec, n);
                           });
  }

  void on_socks_greeting() {
    auto greeting = parse_socks_greeting(buffered());
    if (greeting.state == SocksParse::incomplete) {
      return read_more(&Session::on_socks_greeting);
    }
    if (greeting.state == SocksParse::invalid || !greeting.no_auth) {
      m_record.reason =
          "a SOCKS5 client that offers no \"no authentication\" method; only names in "
          "network.allow are reachable";
      return answer(std::string{static_cast<char>(k_socks_version), '\xff'});
    }
    m_head.consume(greeting.size);
    auto reply = std::make_shared<std::string>(
        std::string{static_cast<char>(k_socks_version), 0});  // no authentication
    asio::async_write(m_client, asio::buffer(*reply),
                      [self = shared_from_this(), reply](boost::system::error_code ec, size_t) {
                        if (ec) {
                          return self->close();
                        }
                        self->on_socks_request();
                      });
  }

  void on_socks_request() {
    auto parsed = parse_socks_request(buffered());
    if (parsed.state == SocksParse::incomplete) {
      return read_more(&Session::on_socks_request);
    }
    if (parsed.state == SocksParse::invalid) {
      m_record.reason = parsed.error + "; only names in network.allow are reachable";
      return answer(socks_reply(parsed.reply));
    }
    m_head.consume(parsed.size);
    serve(parsed.request);
  }

  void on_head(boost::system::error_code ec, size_t size) {
    if (ec) {
      m_record.reason = "the client sent no complete request";
      return close();
    }
    std::string head(asio::buffers_begin(m_head.data()),
                     asio::buffers_begin(m_head.data()) + static_cast<std::ptrdiff_t>(size));
    m_head.consume(size);
    std::string error;
    auto request = parse_proxy_request(head, error);
    m_record.method = head.substr(0, std::min(head.find(' '), size_t{16}));
    if (!request) {
      return refuse(error + "; only names in network.allow are reachable", 400);
    }
    serve(*request);
  }

  // One request, HTTP or SOCKS: the name's verdict, then its addresses'.
  void serve(const ProxyRequest& request) {
    m_request = request;
    m_record.name = m_request.host;
    m_record.port = m_request.port;
    if (auto refusal = check_name(m_allow, m_request.host, m_request.port); !refusal.empty()) {
      return refuse(refusal);
    }
    resolve(normalize_name(m_request.host));
  }

  void resolve(const std::string& name) {
    if (auto mapped = m_allow.resolve.find(name); mapped != m_allow.resolve.end()) {
      return on_addresses(name, {mapped->second});
    }
    m_resolver.async_resolve(
        name, std::to_string(m_request.port),
        [self = shared_from_this(), name](boost::system::error_code ec,
                                          const tcp::resolver::results_type& results) {
          if (ec) {
            return self->refuse(quoted(name) + " did not resolve (" + ec.message() +
                                "); it is in network.allow, but the host has no address for it");
          }
          std::vector<std::string> addresses;
          for (const auto& entry : results) {
            addresses.push_back(entry.endpoint().address().to_string());
          }
          self->on_addresses(name, addresses);
        });
  }

  void on_addresses(const std::string& name, const std::vector<std::string>& addresses) {
    std::vector<std::string> chosen;
    if (auto refusal = check_addresses(m_allow, name, addresses, chosen); !refusal.empty()) {
      m_record.address = addresses.empty() ? "" : addresses.front();
      return refuse(refusal);
    }
    std::vector<tcp::endpoint> endpoints;
    for (const auto& address : chosen) {
      endpoints.emplace_back(asio::ip::make_address(address), m_request.port);
    }
    asio::async_connect(
        m_upstream, endpoints,
        [self = shared_from_this()](boost::system::error_code ec, const tcp::endpoint& endpoint) {
          self->on_connected(ec, endpoint);
        });
  }

  void on_connected(boost::system::error_code ec, const tcp::endpoint& endpoint) {
    if (ec) {
      m_record.reason = "allowed, but the upstream server refused the connection: " + ec.message();
      return answer(m_socks ? socks_reply(k_socks_refused)
                            : "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: "
                              "close\r\n\r\n");
    }
    m_timer.cancel();
    m_record.allowed = true;
    m_record.address = endpoint.address().to_string();
    m_record.reason = "network.allow";
    if (m_request.tunnel) {
      auto reply = std::make_shared<std::string>(
          m_socks ? socks_reply(k_socks_succeeded) : "HTTP/1.1 200 Connection established\r\n\r\n");
      asio::async_write(m_client, asio::buffer(*reply),
                        [self = shared_from_this(), reply](boost::system::error_code e, size_t) {
                          if (!e) {
                            self->send_upstream("");
                          }
                        });
      return;
    }
    // The rewritten head, then whatever body bytes came with it.
    send_upstream(m_request.upstream_head);
  }

  // Bytes the client sent with its request head (a body, or TLS after CONNECT) go first.
  void send_upstream(std::string prefix) {
    auto bytes = std::make_shared<std::string>(std::move(prefix));
    bytes->append(asio::buffers_begin(m_head.data()), asio::buffers_end(m_head.data()));
    m_head.consume(m_head.size());
    if (bytes->empty()) {
      return relay();
    }
    asio::async_write(m_upstream, asio::buffer(*bytes),
                      [self = shared_from_this(), bytes](boost::system::error_code e, size_t n) {
                        self->m_record.bytes_up += static_cast<int64_t>(n);
                        if (!e) {
                          self->relay();
                        }
                      });
  }

  void relay() {
    pump(m_client, m_upstream, m_up, m_record.bytes_up);
    pump(m_upstream, m_client, m_down, m_record.bytes_down);
  }

  // Copies `from` to `to` until the end of `from`, then half-closes `to`.
  template <typename From, typename To>
  void pump(From& from, To& to, std::array<char, k_buffer>& buffer, int64_t& counter) {
    from.async_read_some(asio::buffer(buffer), [this, self = shared_from_this(), &from, &to,
                                                &buffer,
                                                &counter](boost::system::error_code ec, size_t n) {
      if (ec) {
        boost::system::error_code ignored;
        to.shutdown(asio::socket_base::shutdown_send, ignored);
        return;
      }
      asio::async_write(
          to, asio::buffer(buffer.data(), n),
          [this, self, &from, &to, &buffer, &counter](boost::system::error_code e, size_t written) {
            counter += static_cast<int64_t>(written);
            if (e) {
              return close();
            }
            pump(from, to, buffer, counter);
          });
    });
  }

  void refuse(const std::string& reason, int status = 403) {
    m_record.allowed = false;
    m_record.reason = reason;
    answer(m_socks ? socks_reply(k_socks_not_allowed) : refusal_response(reason, status));
  }

  void answer(std::string response) {
    m_timer.cancel();
    auto text = std::make_shared<std::string>(std::move(response));
    asio::async_write(m_client, asio::buffer(*text),
                      [self = shared_from_this(), text](boost::system::error_code, size_t) {
                        boost::system::error_code ignored;
                        self->m_client.shutdown(asio::socket_base::shutdown_send, ignored);
                        self->close();
                      });
  }

  void close() {
    boost::system::error_code ignored;
    m_timer.cancel();
    m_resolver.cancel();
    m_client.close(ignored);
    m_upstream.close(ignored);
  }

  local_socket m_client;
  tcp::socket m_upstream;
  tcp::resolver m_resolver;
  asio::steady_timer m_timer;
  asio::streambuf m_head{k_max_head};
  std::array<char, k_buffer> m_up{};
  std::array<char, k_buffer> m_down{};
  const AllowList& m_allow;
  Records& m_records;
  ProxyRequest m_request;
  bool m_socks = false;  // the client speaks SOCKS5: answers are SOCKS replies, not HTTP
  ConnectionRecord m_record;
  int64_t m_started;
};

void accept_next(asio::local::stream_protocol::acceptor& acceptor, const AllowList& allow,
                 Records& records) {
  acceptor.async_accept(
      [&acceptor, &allow, &records](boost::system::error_code ec, local_socket client) {
        if (ec == asio::error::operation_aborted) {
          return;
        }
        if (!ec) {
          std::make_shared<Session>(std::move(client), allow, records)->start();
        }
        accept_next(acceptor, allow, records);
      });
}

UniqueFd bind_unix(const std::filesystem::path& path, bool world_connectable) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof address.sun_path) {
    throw Fatal("the egress socket path " + quoted(path.string()) + " is too long");
  }
  std::memcpy(address.sun_path, path.c_str(), path.native().size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  mode_t previous = ::umask(world_connectable ? 0 : 0177);
  int bound =
      fd.valid() ? ::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) : -1;
  ::umask(previous);
  if (bound != 0 || ::listen(fd.get(), 128) != 0) {
    throw Fatal("cannot listen on the egress socket " + quoted(path.string()) + ": " +
                std::strerror(errno));
  }
  if (world_connectable) {
    ::chmod(path.c_str(), 0666);
  }
  return fd;
}

}  // namespace

std::string check_name(const AllowList& allow, const std::string& host, uint16_t port) {
  if (is_ip_literal(host)) {
    return "the address " + quoted(host) +
           " was refused: the proxy reaches names listed in network.allow, never IP addresses";
  }
  std::string name = normalize_name(host);
  if (name.empty()) {
    return quoted(host) + " is not a host name; only names in network.allow are reachable";
  }
  if (!allow.allows(name, port)) {
    return name + ":" + std::to_string(port) +
           " is not in network.allow (sandbox.network = allowlist); add it to network.allow in "
           "a trusted config to reach it";
  }
  return "";
}

std::string check_addresses(const AllowList& allow, const std::string& name,
                            const std::vector<std::string>& addresses,
                            std::vector<std::string>& chosen) {
  chosen.clear();
  auto mapped = allow.resolve.find(name);
  for (const auto& address : addresses) {
    bool trusted = mapped != allow.resolve.end() && mapped->second == address;
    if (trusted || !is_restricted_address(address)) {
      chosen.push_back(address);
    }
  }
  if (!chosen.empty()) {
    return "";
  }
  if (addresses.empty()) {
    return quoted(name) + " has no address; it is in network.allow but cannot be reached";
  }
  return name + " resolves to " + addresses.front() +
         ", a loopback, link-local or private address, which network.allow never reaches "
         "(only a trusted network.resolve entry may map a name to one)";
}

std::string encode_record(const ConnectionRecord& r) {
  nlohmann::json j = {{"start_ms", r.start_ms},
                      {"method", r.method},
                      {"name", r.name},
                      {"port", r.port},
                      {"address", r.address},
                      {"allowed", r.allowed},
                      {"reason", r.reason},
                      {"bytes_up", r.bytes_up},
                      {"bytes_down", r.bytes_down},
                      {"duration_ms", r.duration_ms}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ConnectionRecord decode_record(const std::string& line) {
  auto j = nlohmann::json::parse(line);
  ConnectionRecord r;
  r.start_ms = j.at("start_ms").get<int64_t>();
  r.method = j.at("method").get<std::string>();
  r.name = j.at("name").get<std::string>();
  r.port = j.at("port").get<uint16_t>();
  r.address = j.at("address").get<std::string>();
  r.allowed = j.at("allowed").get<bool>();
  r.reason = j.at("reason").get<std::string>();
  r.bytes_up = j.at("bytes_up").get<int64_t>();
  r.bytes_down = j.at("bytes_down").get<int64_t>();
  r.duration_ms = j.at("duration_ms").get<int64_t>();
  return r;
}

void serve(int listener, const AllowList& allow, int records_fd) {
  Records records;
  {
    asio::io_context io(1);
    asio::local::stream_protocol::acceptor acceptor(io, asio::local::stream_protocol(), listener);
    asio::signal_set signals(io, SIGTERM);
    signals.async_wait([&](boost::system::error_code, int) {
      boost::system::error_code ignored;
      acceptor.close(ignored);
      io.stop();
    });
    accept_next(acceptor, allow, records);
    io.run();
  }  // destroying the context ends every session, which completes its record
  std::string text;
  for (const auto& record : records) {
    text += encode_record(record) + "\n";
  }
  write_all(records_fd, text);
}

namespace {

// The forked proxy: dies with the shim that started it, serves until SIGTERM, and never returns
// into the shim's code.
[[noreturn]] void serve_as_child(int listener, const AllowList& allow, int records_fd,
                                 pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(1);
  }
  // The terminal's signals are the run's: the shim forwards them to the container, and the
  // proxy serves until the shim itself says stop (SIGTERM).
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGPIPE}) {
    ::signal(sig, SIG_IGN);
  }
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  try {
    serve(listener, allow, records_fd);
  } catch (...) {
    ::_exit(1);
  }
  ::_exit(0);
}

}  // namespace

ProxyProcess ProxyProcess::start(const AllowList& allow, const std::filesystem::path& socket_path,
                                 bool world_connectable) {
  UniqueFd listener = bind_unix(socket_path, world_connectable);
  Pipe records = make_pipe();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Fatal(std::string("cannot start the egress proxy: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    records.read.reset();
    serve_as_child(listener.get(), allow, records.write.get(), parent);
  }
  return ProxyProcess(pid, std::move(records.read));
}

ProxyProcess::ProxyProcess(pid_t pid, UniqueFd records)
    : m_pid(pid), m_records(std::move(records)) {}

ProxyProcess::ProxyProcess(ProxyProcess&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_records(std::move(other.m_records)) {}

ProxyProcess::~ProxyProcess() {
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, nullptr, 0);
  }
}

std::vector<ConnectionRecord> ProxyProcess::stop() {
  std::vector<ConnectionRecord> records;
  if (m_pid <= 0) {
    return records;
  }
  ::kill(m_pid, SIGTERM);
  std::string text = read_to_end(m_records.get()).value_or("");
  ::waitpid(m_pid, nullptr, 0);
  m_pid = -1;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = std::min(text.find('\n', begin), text.size());
    try {
      records.push_back(decode_record(text.substr(begin, end - begin)));
    } catch (const std::exception&) {
      // a line cut short by a killed proxy: the complete ones are kept
    }
    begin = end + 1;
  }
  return records;
}

}  // namespace sandshim::egress
