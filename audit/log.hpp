#pragma once

#include <spdlog/logger.h>

#include <string>

namespace sandshim::audit {

// The "sandshim" logger, created on stderr when nobody registered it: the store runs inside the
// shim, whose stdout belongs to the wrapped program.
spdlog::logger& logger();

// Gives `logger` the spdlog `pattern`, whose %v (the message) is written through escape_text
// (common/escape.hpp): a command, session id or path in a message can neither start a log line of
// its own nor reach the terminal raw, whichever call site forgot to quote it.
void set_line_safe_pattern(spdlog::logger& logger, const std::string& pattern);

}  // namespace sandshim::audit
