#pragma once

#include <spdlog/logger.h>

namespace sandshim::audit {

// The "sandshim" logger, created on stderr when nobody registered it: the store runs inside the
// shim, whose stdout belongs to the wrapped program.
spdlog::logger& logger();

}  // namespace sandshim::audit
