#pragma once

#include <cstdint>
#include <string>

#include "install/doctor_findings.hpp"

namespace sandshim::install {

// doctor's `engines` line for engine.endpoints, `answering` of `total` engines answering their
// ping: ok when every engine answers; a warning when some do not (placement skips them until
// they answer); a failure when none does (every run is refused). `detail` names each one.
Finding engines_finding(int64_t answering, int64_t total, std::string detail);

}  // namespace sandshim::install
