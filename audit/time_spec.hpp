#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim::audit {

// ISO-8601 date or date-time: 2024-05-01, 2024-05-01T12:30, 2024-05-01 12:30:00.250,
// with Z or an offset (+02:00, -0500); no offset means UTC, the audit's time zone. Nullopt
// outside the years 0000 to 9999 in UTC, which format_iso8601_ms could not write back.
std::optional<int64_t> parse_iso8601_ms(std::string_view text);

// A relative age, counted back from now: 90s, 30m, 2h, 7d, 1w, 1.5h.
std::optional<int64_t> parse_age_ms(std::string_view text);

// The value of --since, --until or --older-than as epoch milliseconds; a bad value is a usage
// error (exit 2) that names the option and shows both accepted forms.
int64_t parse_time_spec(std::string_view text, int64_t now_ms, std::string_view option);

// 2024-05-01T12:30:00.250Z: what people read and tools parse back. Outside the years 0000 to
// 9999 (only a damaged audit row holds such a time) the plain number of milliseconds.
std::string format_iso8601_ms(int64_t ms);
// 2024-05-01, the bucket of `stats --by day`.
std::string format_day(int64_t ms);

}  // namespace sandshim::audit
