#include "install/codex_app_server.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

extern char** environ;

namespace sandshim::install {

namespace fs = std::filesystem;
// Not the ordered `Json` of the other installers: one namespace with them in a unity build.
using RpcJson = nlohmann::json;

namespace {

constexpr int k_hooks_list_id = 2;
constexpr int64_t k_exit_grace_ms = 1000;
constexpr size_t k_max_output = 4 << 20;

// initialize, initialized, then hooks/list for `cwd`: the whole conversation, written at once.
std::string requests_for(const fs::path& cwd) {
  RpcJson initialize = {
      {"id", 1},
      {"method", "initialize"},
      {"params", {{"clientInfo", {{"name", "sandshim-doctor"}, {"version", "1"}}}}}};
  RpcJson list = {{"id", k_hooks_list_id},
                  {"method", "hooks/list"},
                  {"params", {{"cwds", RpcJson::array({cwd.string()})}}}};
  return initialize.dump() + "\n" + RpcJson{{"method", "initialized"}}.dump() + "\n" + list.dump() +
         "\n";
}

std::vector<std::string> caller_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    env.emplace_back(*entry);
  }
  return env;
}

// The server and its pipes; closing its stdin ends it, a kill of its group is the backstop.
class AppServer {
 public:
  explicit AppServer(const fs::path& codex) {
    Pipe in = make_pipe();
    Pipe out = make_pipe();
    Pipe err = make_pipe();
    SpawnOptions options{{codex.string(), "app-server"},
                         caller_environment(),
                         in.read.get(),
                         out.write.get(),
                         err.write.get(),
                         true,
                         true,
                         {}};
    m_pid = spawn(options);
    m_in = std::move(in.write);
    m_out = std::move(out.read);
    m_err = std::move(err.read);
  }
  AppServer(const AppServer&) = delete;
  AppServer& operator=(const AppServer&) = delete;
  ~AppServer() { stop(); }

  bool send(const std::string& text) {
    return ::write(m_in.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }
  int out_fd() const { return m_out.get(); }
  int err_fd() const { return m_err.get(); }

  void stop() {
    if (m_pid <= 0) {
      return;
    }
    m_in.reset();
    int64_t deadline = monotonic_ms() + k_exit_grace_ms;
    int status = 0;
    while (::waitpid(m_pid, &status, WNOHANG) == 0 && monotonic_ms() < deadline) {
      ::usleep(10000);
    }
    ::kill(-m_pid, SIGKILL);
    ::waitpid(m_pid, &status, WNOHANG);
    m_pid = -1;
  }

 private:
  pid_t m_pid = -1;
  UniqueFd m_in;
  UniqueFd m_out;
  UniqueFd m_err;
};

bool answers_hooks_list(const std::string& line) {
  RpcJson message = RpcJson::parse(line, nullptr, false);
  return message.is_object() && message.value("id", -1) == k_hooks_list_id;
}

// Appends what fd holds to `text`; false at end of file.
bool read_some(int fd, std::string& text) {
  char buffer[8192];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n < 0) {
    return errno == EINTR || errno == EAGAIN;
  }
  if (n > 0 && text.size() < k_max_output) {
    text.append(buffer, static_cast<size_t>(n));
  }
  return n > 0;
}

std::vector<std::string> complete_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string last_line_of(const std::string& text) {
  std::string trimmed = trim(text);
  size_t newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

struct Conversation {
  std::string out;
  std::string err;
  bool answered = false;
  bool ended = false;  // the server closed its output
};

// Reads the server's output until the hooks/list answer, its end, or the deadline.
Conversation converse(AppServer& server, int64_t deadline) {
  Conversation talk;
  pollfd fds[2] = {{server.out_fd(), POLLIN, 0}, {server.err_fd(), POLLIN, 0}};
  while (!talk.answered && !talk.ended) {
    int64_t left = deadline - monotonic_ms();
    if (left <= 0 || ::poll(fds, 2, static_cast<int>(left)) < 0) {
      break;
    }
    if (fds[1].fd >= 0 && fds[1].revents != 0 && !read_some(fds[1].fd, talk.err)) {
      fds[1].fd = -1;
    }
    if (fds[0].revents != 0) {
      talk.ended = !read_some(fds[0].fd, talk.out);
      for (const std::string& line : complete_lines(talk.out)) {
        talk.answered = talk.answered || answers_hooks_list(line);
      }
    }
  }
  return talk;
}

std::vector<std::string> strings_of(const RpcJson& list) {
  std::vector<std::string> found;
  for (const RpcJson& item : list.is_array() ? list : RpcJson::array()) {
    if (item.is_string()) {
      found.push_back(item.get<std::string>());
    } else if (item.is_object()) {
      found.push_back(item.value("path", "") + ": " + item.value("message", ""));
    }
  }
  return found;
}

CodexHook hook_from(const RpcJson& hook) {
  return {hook.value("key", ""),         hook.value("eventName", ""),
          hook.value("command", ""),     hook.value("trustStatus", ""),
          hook.value("currentHash", ""), hook.value("enabled", true)};
}

void add_entries(const RpcJson& result, CodexHookList& list) {
  for (const RpcJson& entry : result.value("data", RpcJson::array())) {
    for (const RpcJson& hook : entry.value("hooks", RpcJson::array())) {
      list.hooks.push_back(hook_from(hook));
    }
    for (const char* key : {"warnings", "errors"}) {
      for (std::string& text : strings_of(entry.value(key, RpcJson::array()))) {
        list.warnings.push_back(std::move(text));
      }
    }
  }
}

}  // namespace

std::optional<fs::path> find_codex(const std::string& path_variable) {
  return find_in_path("codex", path_variable, [](const fs::path&) { return false; });
}

CodexHookList parse_codex_hook_list(const std::vector<std::string>& lines) {
  CodexHookList list;
  for (const std::string& line : lines) {
    RpcJson message = RpcJson::parse(line, nullptr, false);
    if (!message.is_object()) {
      continue;
    }
    if (message.value("method", "") == "configWarning") {
      list.warnings.push_back(message["params"].value("summary", ""));
    }
    if (message.value("id", -1) != k_hooks_list_id) {
      continue;
    }
    if (message.contains("error")) {
      list.problem = "hooks/list failed: " + message["error"].value("message", message.dump());
    } else {
      add_entries(message.value("result", RpcJson::object()), list);
    }
    return list;
  }
  list.problem = "no answer to hooks/list";
  return list;
}

CodexHookList list_codex_hooks(const fs::path& codex, const fs::path& cwd,
                               std::chrono::milliseconds timeout) {
  try {
    AppServer server(codex);
    if (!server.send(requests_for(cwd))) {
      return {"`" + codex.string() + " app-server` did not read its input", {}, {}};
    }
    Conversation talk = converse(server, monotonic_ms() + timeout.count());
    server.stop();
    if (talk.answered) {
      return parse_codex_hook_list(complete_lines(talk.out));
    }
    std::string why = talk.ended ? "exited without answering hooks/list"
                                 : "did not answer hooks/list within " +
                                       std::to_string(timeout.count() / 1000) + " s";
    std::string err = last_line_of(talk.err);
    return {"`" + codex.string() + " app-server` " + why + (err.empty() ? "" : ": " + err), {}, {}};
  } catch (const std::exception& e) {
    return {std::string(e.what()), {}, {}};
  }
}

}  // namespace sandshim::install
