#include "audit/liveness.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>

#include "common/strings.hpp"

namespace sandshim::audit {

std::string current_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string current_boot_id() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(file, id);
  return trim(id);
}

std::optional<int64_t> process_start_ticks(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(file, line)) {
    return std::nullopt;
  }
  size_t after_name = line.rfind(')');  // the name may hold spaces and parentheses
  if (after_name == std::string::npos || after_name + 2 > line.size()) {
    return std::nullopt;
  }
  std::istringstream fields(line.substr(after_name + 2));  // field 3 onwards
  std::string skipped;
  for (int field = 3; field < 22 && fields >> skipped; ++field) {
  }
  int64_t ticks = 0;
  return fields >> ticks ? std::optional<int64_t>(ticks) : std::nullopt;
}

bool shim_is_alive(const ShimProcess& shim) {
  if (!shim.boot_id.empty() && shim.boot_id != current_boot_id()) {
    return false;  // the machine rebooted since: every shim of that boot is gone
  }
  if (shim.pid <= 0 || (::kill(shim.pid, 0) != 0 && errno != EPERM)) {
    return false;
  }
  auto ticks = process_start_ticks(shim.pid);
  return shim.start_ticks == 0 || !ticks || *ticks == shim.start_ticks;
}

}  // namespace sandshim::audit
