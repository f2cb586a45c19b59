// The time and size specs people type (--since, --until, --older-than, sandbox.memory,
// sandbox.timeout): refused with a usage error or parsed; what is parsed formats and reads back
// to the same value.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "common/strings.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;

namespace {

constexpr int64_t k_now_ms = 1'750'000'000'000;  // a fixed "now": runs must be reproducible

void check_iso8601(std::string_view text) {
  auto ms = audit::parse_iso8601_ms(text);
  if (!ms) {
    return;
  }
  std::string formatted = audit::format_iso8601_ms(*ms);
  fuzz::require(audit::parse_iso8601_ms(formatted) == ms, "ISO-8601 time does not read back");
  (void)audit::format_day(*ms);
}

void check_time_spec(std::string_view text) {
  try {
    (void)audit::parse_time_spec(text, k_now_ms, "since");
  } catch (const Fatal& e) {
    fuzz::require(e.code() == exit_code::k_usage, "a bad time spec is not a usage error");
  }
  (void)audit::parse_age_ms(text);
}

void check_sizes(std::string_view text) {
  if (auto bytes = parse_byte_size(text)) {
    fuzz::require(parse_byte_size(format_byte_size(*bytes)) == bytes,
                  "byte size does not read back");
  }
  if (auto ms = parse_duration_ms(text)) {
    fuzz::require(*ms > 0, "a parsed duration is not positive");
    (void)format_duration_ms(*ms);
  }
}

// Times read back from an audit database someone else may have written: any value formats.
void check_any_time(const uint8_t* data, size_t size) {
  int64_t ms = 0;
  std::memcpy(&ms, data, std::min(size, sizeof ms));
  (void)audit::format_iso8601_ms(ms);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_iso8601(text);
  check_time_spec(text);
  check_sizes(text);
  check_any_time(data, size);
  return 0;
}
