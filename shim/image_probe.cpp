#include "shim/image_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/process.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_default_docker_socket = "/var/run/docker.sock";
constexpr size_t k_max_answer_bytes = 1 << 20;

// Image references are letters, digits and `._-/:@`; anything else is escaped for the URL path.
std::string url_path_escape(const std::string& text) {
  static const char* const k_hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || std::strchr("-._~/:@", c) != nullptr) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 15];
    }
  }
  return out;
}

// A connected stream socket, or an invalid fd when nobody answers there (or we may not ask).
UniqueFd connect_unix(const fs::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof address.sun_path) {
    return UniqueFd();
  }
  std::memcpy(address.sun_path, path.c_str(), path.native().size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return UniqueFd();
  }
  return fd;
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Everything the engine sends until it closes, bounded in size; nullopt when it did not finish
// within `wait_ms` (a paused engine must not hold the shim).
std::optional<std::string> read_answer(int fd, int64_t wait_ms) {
  std::string answer;
  char buffer[16384];
  int64_t give_up_ms = monotonic_ms() + wait_ms;
  while (answer.size() < k_max_answer_bytes) {
    pollfd ready{fd, POLLIN, 0};
    int64_t left = give_up_ms - monotonic_ms();
    int polled = left > 0 ? ::poll(&ready, 1, static_cast<int>(left)) : 0;
    if (polled == 0) {
      return std::nullopt;
    }
    if (polled < 0) {
      continue;  // EINTR: the time left is measured again
    }
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer;
}

}  // namespace

std::optional<fs::path> engine_api_socket(const std::string& kind, const std::string& endpoint) {
  if (kind != "docker") {
    return std::nullopt;
  }
  if (endpoint.empty()) {
    return fs::path(k_default_docker_socket);
  }
  if (endpoint.starts_with("unix://")) {
    return fs::path(endpoint.substr(7));
  }
  return std::nullopt;
}

std::string image_inspect_request(const std::string& image) {
  return "GET /images/" + url_path_escape(image) +
         "/json HTTP/1.0\r\nHost: docker\r\nUser-Agent: sandshim\r\n\r\n";
}

std::string image_id_from_response(const std::string& response) {
  if (!response.starts_with("HTTP/1.") || response.size() < 12 ||
      response.compare(9, 3, "200") != 0) {
    return "";
  }
  size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) {
    return "";
  }
  auto json = nlohmann::json::parse(response.begin() + static_cast<std::ptrdiff_t>(body + 4),
                                    response.end(), nullptr, false);
  if (!json.is_object() || !json.contains("Id") || !json["Id"].is_string()) {
    return "";
  }
  return json["Id"].get<std::string>();
}

ImageProbe::ImageProbe(const Engine& engine, const std::string& image) : m_dialect(engine.dialect) {
  if (auto socket = engine_api_socket(engine.kind, engine.endpoint)) {
    m_socket = connect_unix(*socket);
    if (m_socket.valid() && send_all(m_socket.get(), image_inspect_request(image))) {
      return;  // the engine answers while the run starts; result() reads it
    }
    m_socket.reset();
  }
  start_client(engine, image);
}

ImageProbe::~ImageProbe() {
  result(0);
}

void ImageProbe::start_client(const Engine& engine, const std::string& image) {
  Pipe out = make_pipe();
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  SpawnOptions options;
  options.argv = {engine.client.string(), "image", "inspect", "--format={{.Id}}", image};
  options.env = engine.env;
  options.stdin_fd = null_fd.get();
  options.stdout_fd = out.write.get();
  options.stderr_fd = null_fd.get();
  options.die_with_parent = true;
  m_pid = spawn(options);
  m_out = std::move(out.read);
}

std::string ImageProbe::result(int64_t wait_ms) {
  if (m_done) {
    return m_id;
  }
  m_done = true;
  if (m_socket.valid()) {
    m_id = image_id_from_response(read_answer(m_socket.get(), wait_ms).value_or(""));
    m_socket.reset();
  } else if (m_pid > 0) {
    auto id = read_answer(m_out.get(), wait_ms);
    if (!id) {
      ::kill(m_pid, SIGKILL);
    }
    bool ok = wait_for(m_pid).code == 0 && id;
    m_pid = -1;
    m_id = ok ? m_dialect.normalize_image_id(trim(*id)) : "";
  }
  return m_id;
}

}  // namespace sandshim::shim
