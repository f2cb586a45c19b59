#pragma once

#include <span>
#include <string>
#include <string_view>

#include "run/run_spec.hpp"

namespace sandshim::shim {

// What an engine client's error line says went wrong.
enum class EngineErrorKind {
  image_missing,  // the image is not in the engine's store
  unreachable,    // the engine does not answer on its socket
  permission,     // the caller may not use the engine
  other,
};

// One line an engine client prints, and what it means. The fix for each kind is the engine's
// own (engine_error_fix), from its dialect.
struct EngineErrorPattern {
  std::string_view text;  // a substring of the client's error line
  EngineErrorKind kind;
  std::string_view engine;  // the client that prints it (docker, podman); both match it
};

// The table of engine error lines sandshim recognises, in the order they are tried.
std::span<const EngineErrorPattern> engine_error_patterns();

// The kind of the engine's error line `reason` (first matching row of the table).
EngineErrorKind classify_engine_error(const std::string& reason);

// The fix to name for an error of `kind` in a run of `spec`, in this engine's terms.
std::string engine_error_fix(EngineErrorKind kind, const RunSpec& spec);

// Names the engine failure in one line with its fix, from what the engine client printed.
std::string describe_engine_error(const std::string& engine_output, const RunSpec& spec);

}  // namespace sandshim::shim
