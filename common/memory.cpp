#include "common/memory.hpp"

#include <fstream>
#include <string>

namespace sandshim {

std::optional<long> peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) {
      return std::stol(line.substr(6));
    }
  }
  return std::nullopt;
}

}  // namespace sandshim
