#include "audit/log.hpp"

#include "common/environment.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>

namespace sandshim::audit {

spdlog::logger& logger() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get("sandshim")) {
    return *existing;
  }
  auto created = spdlog::stderr_logger_mt("sandshim");
  created->set_pattern("sandshim: %v");
  auto level = environment::log_level();
  created->set_level(level ? spdlog::level::from_str(*level) : spdlog::level::warn);
  return *created;
}

}  // namespace sandshim::audit
