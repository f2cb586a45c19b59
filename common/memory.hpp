#pragma once

#include <optional>

namespace sandshim {

// This process's peak resident set size in KiB (VmHWM), to report what a run cost in memory.
std::optional<long> peak_rss_kib();

}  // namespace sandshim
