// Log lines carry caller strings (commands, session ids, paths): each message stays one line.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "audit/log.hpp"
#include "common/escape.hpp"
#include "test_escape_support.hpp"

TEST_CASE("a line-safe logger writes one clean line a message", "[audit][log]") {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
  spdlog::logger logger("line-safe-test", sink);
  sandshim::audit::set_line_safe_pattern(logger, "sandshim: %l: %v");
  auto messages = sandshim::testing::hostile_strings(500, 80);
  messages.push_back(std::string(100000, '\n'));
  for (const auto& message : messages) {
    logger.warn("hook: session {} ran {}", message, message);
  }
  std::istringstream in(out.str());
  size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) {
    INFO(line);
    REQUIRE(line.starts_with("sandshim: warning: hook: session "));
    REQUIRE_FALSE(sandshim::testing::has_raw_control(line));
    REQUIRE(line.size() < sandshim::k_escape_cap * 4 + 100);
  }
  CHECK(count == messages.size());
}
