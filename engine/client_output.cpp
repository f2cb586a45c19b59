#include "engine/client_output.hpp"

#include <algorithm>
#include <cstring>

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
  return "the container engine was lost while the command ran (" + trim(reason) +
         "); the command may have run in part; its guardian removes the container once the "
         "engine answers again; check the engine with `docker info`";
}

}  // namespace sandshim::shim
