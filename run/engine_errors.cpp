#include "run/engine_errors.hpp"

#include <unistd.h>

#include <filesystem>

#include "common/environment.hpp"
#include "common/strings.hpp"
#include "engine/agent_sandbox.hpp"

namespace sandshim::shim {

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
  std::string reason = engine_error_reason(engine_output);
  return describe_engine_failure(classify_engine_error(reason), reason, spec);
}

std::string describe_engine_failure(EngineErrorKind kind, const std::string& reason,
                                    const RunSpec& spec) {
  std::string fix = engine_error_fix(kind, spec);
  if (kind == EngineErrorKind::permission) {
    fix = engine_socket_refused_fix(reason, environment::agent(), ::geteuid() == 0, fix);
  }
  return "the container engine failed (" + reason + "); " + fix + "; nothing ran";
}

}  // namespace sandshim::shim
