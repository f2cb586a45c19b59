#include "run/engine_errors.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/environment.hpp"
#include "common/strings.hpp"
#include "engine/agent_sandbox.hpp"

namespace sandshim::shim {

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

// The engine's first line that is not one of podman's log lines (`time="…" level=…`).
std::string first_line(const std::string& text) {
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

}  // namespace

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

std::string engine_error_fix(EngineErrorKind kind, const RunSpec& spec) {
  switch (kind) {
    case EngineErrorKind::image_missing:
      return "image " + spec.image +
             " is not present: build the defaults with `sandshim images build`, pull it, or set "
             "images." +
             std::filesystem::path(spec.command.front()).filename().string() + " in the config";
    case EngineErrorKind::unreachable:
      return spec.dialect.start_hint();
    case EngineErrorKind::permission:
      return spec.dialect.permission_hint();
    case EngineErrorKind::other:
      break;
  }
  return "check the engine with " + spec.dialect.info_command();
}

std::string describe_engine_error(const std::string& engine_output, const RunSpec& spec) {
  std::string reason = first_line(engine_output);
  EngineErrorKind kind = classify_engine_error(reason);
  std::string fix = engine_error_fix(kind, spec);
  if (kind == EngineErrorKind::permission) {
    fix = engine_socket_refused_fix(reason, environment::agent(), ::geteuid() == 0, fix);
  }
  return "the container engine failed (" + reason + "); " + fix + "; nothing ran";
}

}  // namespace sandshim::shim
