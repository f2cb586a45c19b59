#include "engine/image_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <optional>

#include "common/io.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "engine/engine_api.hpp"

namespace sandshim::shim {

namespace {

// Connecting and sending are local and immediate unless the engine's backlog is full.
constexpr std::chrono::milliseconds k_send_timeout{1000};
constexpr size_t k_max_answer_bytes = 1 << 20;

// Everything the client prints until it exits, bounded in size; nullopt when it did not finish
// within `wait_ms`.
std::optional<std::string> read_until_closed(int fd, int64_t wait_ms) {
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
    ssize_t n = retry_on_eintr([&] { return ::read(fd, buffer, sizeof buffer); });
    if (n <= 0) {
      break;
    }
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer;
}

}  // namespace

ImageProbe::ImageProbe(const Engine& engine, const std::string& image) : m_dialect(engine.dialect) {
  if (auto api = engine_api(engine, k_send_timeout)) {
    m_request = api->send_inspect_image(image);
    if (m_request.sent()) {
      return;  // the engine answers while the run starts; result() reads it
    }
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

std::string ImageProbe::client_result(int64_t wait_ms) {
  auto id = read_until_closed(m_out.get(), wait_ms);
  if (!id) {
    ::kill(m_pid, SIGKILL);
  }
  bool ok = wait_for(m_pid).code == 0 && id;
  m_pid = -1;
  return ok ? trim(*id) : "";
}

std::string ImageProbe::result(int64_t wait_ms) {
  if (m_done) {
    return m_id;
  }
  m_done = true;
  if (m_request.sent()) {
    m_id = engine::image_id(m_request.get(std::chrono::milliseconds(wait_ms)));
  } else if (m_pid > 0) {
    m_id = client_result(wait_ms);
  }
  m_id = m_dialect.normalize_image_id(m_id);
  return m_id;
}

}  // namespace sandshim::shim
