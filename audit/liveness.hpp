#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace sandshim::audit {

// The shim process behind a `running` row. pid alone is reused; pid + start time in clock ticks
// + boot id name one process for good, whatever the wall clock does.
struct ShimProcess {
  pid_t pid = 0;
  int64_t start_ticks = 0;  // 0 when it could not be read
  std::string boot_id;      // empty when it could not be read
};

using ShimLiveness = std::function<bool(const ShimProcess& shim)>;

// The default check: same boot, the pid exists, and it is the same process (same start ticks).
bool shim_is_alive(const ShimProcess& shim);

// This machine's name as runs record it (gethostname): abandoned runs are looked for among the
// rows of this host only, so the shim must fill RunRecord::host with this value.
std::string current_host();

// This machine's boot id (/proc/sys/kernel/random/boot_id), or empty.
std::string current_boot_id();
// When `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat).
std::optional<int64_t> process_start_ticks(pid_t pid);

}  // namespace sandshim::audit
