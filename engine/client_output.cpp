#include "engine/client_output.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include "common/strings.hpp"

namespace sandshim::shim {

bool starts_like_engine_error(const std::string& text) {
  if (text.empty()) {
    return false;
  }
  // `time="…" level=warning`: podman's log lines, which may come before its error.
  static const char* const k_prefixes[] = {"docker: ",
                                           "Error: ",
                                           "Error response from daemon",
                                           "Cannot connect to",
                                           "permission denied while",
                                           "time=\""};
  for (const char* prefix : k_prefixes) {
    size_t n = std::min(text.size(), std::strlen(prefix));
    if (text.compare(0, n, prefix, n) == 0) {
      return true;
    }
  }
  return false;
}

bool starts_like_engine_lost(const std::string& text) {
  return text.starts_with("time=\"") && reports_engine_lost(text);
}

bool reports_engine_lost(const std::string& engine_output) {
  return engine_output.find("error waiting for container") != std::string::npos;
}

std::string describe_lost_engine(const std::string& engine_output) {
  size_t at = engine_output.rfind("error waiting for container");
  std::string reason = engine_output.substr(at, engine_output.find_first_of("\"\n", at) - at);
  return describe_engine_lost(trim(reason), "`docker info`");
}

bool reports_container_gone(const std::string& engine_stderr) {
  std::string lower = engine_stderr;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("no such container") != std::string::npos ||
         lower.find("no container with name or id") != std::string::npos;
}

bool reports_no_such_container(const std::string& engine_stderr, const std::string& name) {
  return trim(engine_stderr) == "Error response from daemon: No such container: " + name;
}

bool reports_socket_refused(const std::string& engine_stderr) {
  return engine_stderr.find("permission denied while trying to connect") != std::string::npos;
}

bool reports_exec_not_found(const std::string& engine_output) {
  return engine_output.starts_with("OCI runtime exec failed") &&
         (engine_output.find("executable file not found") != std::string::npos ||
          engine_output.find("no such file or directory") != std::string::npos);
}

namespace {

constexpr EngineErrorPattern k_patterns[] = {
    {"No such image", EngineErrorKind::image_missing, "docker"},
    {"image not known", EngineErrorKind::image_missing, "podman"},
    {"unable to find image", EngineErrorKind::image_missing, "podman"},
    {"Cannot connect", EngineErrorKind::unreachable, "docker"},
    {"Is the docker daemon running", EngineErrorKind::unreachable, "docker"},
    {"connection refused", EngineErrorKind::unreachable, "podman"},
    {"permission denied", EngineErrorKind::permission, "docker"},
};

}  // namespace

std::string engine_error_reason(const std::string& text) {
  std::string line;
  std::istringstream lines(text);
  while (std::getline(lines, line) && line.starts_with("time=\"")) {
  }
  for (const char* prefix : {"docker: ", "Error: "}) {
    if (line.starts_with(prefix)) {
      line = line.substr(std::strlen(prefix));
    }
  }
  return trim(line);
}

std::span<const EngineErrorPattern> engine_error_patterns() {
  return k_patterns;
}

EngineErrorKind classify_engine_error(const std::string& reason) {
  for (const EngineErrorPattern& pattern : k_patterns) {
    if (reason.find(pattern.text) != std::string::npos) {
      return pattern.kind;
    }
  }
  return EngineErrorKind::other;
}

}  // namespace sandshim::shim
