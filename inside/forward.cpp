// sandshim-forward: the in-container half of sandbox.network = allowlist. Listens on a loopback
// TCP port of the container (where HTTP_PROXY points), relays each connection to the unix socket
// of the run's filtering proxy on the host, and execs the run's command in its own place, so the
// command keeps the init's child slot, its exit code and its signals. Static, libc only: it runs
// in any image.
//
//   sandshim-forward --listen 127.0.0.1:PORT --to /sandshim-egress/proxy.sock -- COMMAND ARGS...

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr int k_setup_failed = 125;  // as docker run: the sandbox could not start the command
constexpr size_t k_buffer = 64 * 1024;
constexpr size_t k_max_connections = 256;

[[noreturn]] void fail(const std::string& what, int code = k_setup_failed) {
  std::string line = "sandshim-forward: " + what + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  ::_exit(code);
}

struct Options {
  std::string listen_address;
  uint16_t listen_port = 0;
  std::string socket_path;
  char** command = nullptr;
};

void parse_listen(const std::string& text, Options& options) {
  size_t colon = text.rfind(':');
  long port = colon == std::string::npos ? 0 : std::strtol(text.c_str() + colon + 1, nullptr, 10);
  if (colon == std::string::npos || port <= 0 || port > 65535) {
    fail("--listen expects ADDRESS:PORT, not '" + text + "'");
  }
  options.listen_address = text.substr(0, colon);
  options.listen_port = static_cast<uint16_t>(port);
}

Options parse_options(int argc, char** argv) {
  Options options;
  int i = 1;
  for (; i + 1 < argc && std::string_view(argv[i]) != "--"; i += 2) {
    std::string_view name = argv[i];
    if (name == "--listen") {
      parse_listen(argv[i + 1], options);
    } else if (name == "--to") {
      options.socket_path = argv[i + 1];
    } else {
      fail("unknown option '" + std::string(name) + "'");
    }
  }
  if (i >= argc || std::string_view(argv[i]) != "--" || i + 1 >= argc ||
      options.socket_path.empty() || options.listen_port == 0) {
    fail("usage: sandshim-forward --listen ADDRESS:PORT --to SOCKET -- COMMAND [ARGS...]");
  }
  options.command = argv + i + 1;
  return options;
}

int listen_tcp(const Options& options) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(options.listen_port);
  if (::inet_pton(AF_INET, options.listen_address.c_str(), &address.sin_addr) != 1) {
    fail("--listen expects an IPv4 address, not '" + options.listen_address + "'");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 128) != 0) {
    fail("cannot listen on " + options.listen_address + ":" + std::to_string(options.listen_port) +
         ": " + std::strerror(errno));
  }
  return fd;
}

int connect_unix(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return -1;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Bytes read from one end, waiting to be written to the other.
struct Direction {
  std::array<char, k_buffer> data{};
  size_t begin = 0;
  size_t end = 0;
  bool eof = false;   // the source ended
  bool shut = false;  // the end was passed on (shutdown of the destination)
  bool pending() const { return begin < end; }
  bool done() const { return shut; }
};

// One client connection and its proxy connection.
struct Pair {
  int fd[2];         // 0: the client (TCP), 1: the proxy (unix)
  Direction dir[2];  // dir[i]: from fd[i] to fd[1 - i]
  bool broken = false;

  ~Pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  bool finished() const { return broken || (dir[0].done() && dir[1].done()); }

  short events(int side) const {
    short wanted = 0;
    if (!dir[side].eof && !dir[side].pending()) {
      wanted |= POLLIN;
    }
    if (dir[1 - side].pending()) {
      wanted |= POLLOUT;
    }
    return wanted;
  }

  void read_side(int side) {
    Direction& d = dir[side];
    ssize_t n = ::read(fd[side], d.data.data(), d.data.size());
    if (n > 0) {
      d.begin = 0;
      d.end = static_cast<size_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      d.eof = true;
    }
  }

  void write_side(int side) {
    Direction& d = dir[1 - side];  // the bytes going to fd[side]
    ssize_t n = ::write(fd[side], d.data.data() + d.begin, d.end - d.begin);
    if (n > 0) {
      d.begin += static_cast<size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      broken = true;
    }
  }

  void pass_on_ends() {
    for (int side = 0; side < 2; ++side) {
      Direction& d = dir[side];
      if (d.eof && !d.pending() && !d.shut) {
        ::shutdown(fd[1 - side], SHUT_WR);
        d.shut = true;
      }
    }
  }
};

void accept_one(int listener, const std::string& socket_path,
                std::vector<std::unique_ptr<Pair>>& pairs) {
  int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (client < 0) {
    return;
  }
  int proxy = pairs.size() < k_max_connections ? connect_unix(socket_path) : -1;
  if (proxy < 0) {
    static const char k_gone[] =
        "HTTP/1.1 502 Bad Gateway (sandshim: the egress proxy of network.allow is not "
        "reachable)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    ssize_t ignored = ::write(client, k_gone, sizeof k_gone - 1);
    (void)ignored;
    ::close(client);
    return;
  }
  set_nonblocking(proxy);
  auto pair = std::make_unique<Pair>();
  pair->fd[0] = client;
  pair->fd[1] = proxy;
  pairs.push_back(std::move(pair));
}

// The listener first, then both sides of each pair with the events it waits for now.
void poll_set(int listener, const std::vector<std::unique_ptr<Pair>>& pairs,
              std::vector<pollfd>& fds) {
  fds.assign(1, pollfd{listener, POLLIN, 0});
  for (const auto& pair : pairs) {
    for (int side = 0; side < 2; ++side) {
      fds.push_back(pollfd{pair->fd[side], pair->events(side), 0});
    }
  }
}

[[noreturn]] void relay(int listener, const std::string& socket_path) {
  std::vector<std::unique_ptr<Pair>> pairs;
  std::vector<pollfd> fds;
  for (;;) {
    poll_set(listener, pairs, fds);
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      ::_exit(1);
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      for (int side = 0; side < 2; ++side) {
        short revents = fds[1 + 2 * i + static_cast<size_t>(side)].revents;
        if ((revents & POLLOUT) != 0) {
          pairs[i]->write_side(side);
        }
        if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && pairs[i]->events(side) & POLLIN) {
          pairs[i]->read_side(side);
        }
      }
      pairs[i]->pass_on_ends();
    }
    std::erase_if(pairs, [](const std::unique_ptr<Pair>& pair) { return pair->finished(); });
    if ((fds[0].revents & POLLIN) != 0) {
      accept_one(listener, socket_path, pairs);
    }
  }
}

// The relay runs in a grandchild that the container's init adopts and reaps, so the command has
// no child it did not start; it ends with the container.
void start_relay(int listener, const std::string& socket_path) {
  pid_t middle = ::fork();
  if (middle < 0) {
    fail(std::string("cannot start the relay: fork failed: ") + std::strerror(errno));
  }
  if (middle == 0) {
    if (::fork() == 0) {
      ::signal(SIGPIPE, SIG_IGN);
      int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(null_fd, STDOUT_FILENO);
      ::dup2(null_fd, STDERR_FILENO);
      relay(listener, socket_path);
    }
    ::_exit(0);
  }
  ::waitpid(middle, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv);
  int listener = listen_tcp(options);
  start_relay(listener, options.socket_path);
  ::close(listener);
  ::execvp(options.command[0], options.command);
  int error = errno;
  fail(std::string("cannot run '") + options.command[0] + "': " + std::strerror(error),
       error == ENOENT ? 127 : 126);
}
