#include "audit/log.hpp"

#include "common/environment.hpp"
#include "common/escape.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>

namespace sandshim::audit {

namespace {

// %v with every control, invalid byte and backslash escaped.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm& /*time*/,
              spdlog::memory_buf_t& out) override {
    std::string text =
        escape_text(std::string_view(message.payload.data(), message.payload.size()));
    out.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

}  // namespace

void set_line_safe_pattern(spdlog::logger& logger, const std::string& pattern) {
  std::string escaped = pattern;
  for (size_t at = escaped.find("%v"); at != std::string::npos; at = escaped.find("%v", at)) {
    escaped.replace(at, 2, "%*");
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern(escaped);
  logger.set_formatter(std::move(formatter));
}

spdlog::logger& logger() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get("sandshim")) {
    return *existing;
  }
  auto created = spdlog::stderr_logger_mt("sandshim");
  set_line_safe_pattern(*created, "sandshim: %v");
  auto level = environment::log_level();
  created->set_level(level ? spdlog::level::from_str(*level) : spdlog::level::warn);
  return *created;
}

}  // namespace sandshim::audit
