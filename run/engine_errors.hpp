#pragma once

#include <string>

#include "engine/client_output.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// The fix to name for an error of `kind` in a run of `spec`, in this engine's terms.
std::string engine_error_fix(EngineErrorKind kind, const RunSpec& spec);

// Names the engine failure of `kind` in one line with its fix; `reason` is the engine's words.
std::string describe_engine_failure(EngineErrorKind kind, const std::string& reason,
                                    const RunSpec& spec);

// Names the engine failure in one line with its fix, from what the engine client printed.
std::string describe_engine_error(const std::string& engine_output, const RunSpec& spec);

}  // namespace sandshim::shim
