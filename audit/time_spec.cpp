#include "audit/time_spec.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>

#include "common/error.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

using namespace std::chrono;

// Years 0000 to 9999: what four-digit ISO-8601 can write, and far from where the calendar
// arithmetic of std::chrono overflows.
constexpr int64_t k_first_ms = -62'167'219'200'000;  // 0000-01-01T00:00:00.000Z
constexpr int64_t k_last_ms = 253'402'300'799'999;   // 9999-12-31T23:59:59.999Z

bool is_writable(int64_t ms) {
  return ms >= k_first_ms && ms <= k_last_ms;
}

// Reads fixed-width numbers and separators from left to right.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : m_text(text) {}

  std::optional<int> digits(size_t count) {
    if (m_at + count > m_text.size()) {
      return std::nullopt;
    }
    int value = 0;
    for (size_t i = 0; i < count; ++i) {
      char c = m_text[m_at + i];
      if (std::isdigit(static_cast<unsigned char>(c)) == 0) {
        return std::nullopt;
      }
      value = value * 10 + (c - '0');
    }
    m_at += count;
    return value;
  }

  bool accept(std::string_view choices) {
    if (!done() && choices.find(m_text[m_at]) != std::string_view::npos) {
      ++m_at;
      return true;
    }
    return false;
  }

  [[nodiscard]] char last() const { return m_text[m_at - 1]; }
  [[nodiscard]] bool done() const { return m_at == m_text.size(); }

 private:
  std::string_view m_text;
  size_t m_at = 0;
};

std::optional<int64_t> parse_date_ms(Cursor& cursor) {
  auto y = cursor.digits(4);
  auto m = cursor.accept("-") ? cursor.digits(2) : std::nullopt;
  auto d = m && cursor.accept("-") ? cursor.digits(2) : std::nullopt;
  if (!y || !d) {
    return std::nullopt;
  }
  year_month_day date{year{*y}, month{static_cast<unsigned>(*m)}, day{static_cast<unsigned>(*d)}};
  if (!date.ok()) {
    return std::nullopt;
  }
  return duration_cast<milliseconds>(sys_days{date}.time_since_epoch()).count();
}

// HH:MM[:SS[.fraction]] after the date.
std::optional<int64_t> parse_clock_ms(Cursor& cursor) {
  auto h = cursor.digits(2);
  auto m = h && cursor.accept(":") ? cursor.digits(2) : std::nullopt;
  if (!m || *h > 23 || *m > 59) {
    return std::nullopt;
  }
  int64_t ms = (*h * 60 + *m) * 60000LL;
  if (cursor.accept(":")) {
    auto s = cursor.digits(2);
    if (!s || *s > 59) {
      return std::nullopt;
    }
    ms += *s * 1000LL;
    if (cursor.accept(".,")) {
      int64_t scale = 100;
      for (auto digit = cursor.digits(1); digit; digit = cursor.digits(1), scale /= 10) {
        ms += *digit * scale;
      }
    }
  }
  return ms;
}

// Z, +HH, +HH:MM or +HHMM; the result is what to subtract to reach UTC.
std::optional<int64_t> parse_offset_ms(Cursor& cursor) {
  if (cursor.done() || cursor.accept("Zz")) {
    return 0;
  }
  if (!cursor.accept("+-")) {
    return std::nullopt;
  }
  int sign = cursor.last() == '-' ? -1 : 1;
  auto h = cursor.digits(2);
  cursor.accept(":");
  auto m = cursor.done() ? std::optional<int>(0) : cursor.digits(2);
  if (!h || !m || *h > 23 || *m > 59) {
    return std::nullopt;
  }
  return sign * (int64_t{*h} * 60 + *m) * 60000;
}

}  // namespace

std::optional<int64_t> parse_iso8601_ms(std::string_view text) {
  Cursor cursor(text);
  auto date = parse_date_ms(cursor);
  if (!date) {
    return std::nullopt;
  }
  int64_t ms = *date;
  if (cursor.accept("Tt ")) {
    auto clock = parse_clock_ms(cursor);
    auto offset = clock ? parse_offset_ms(cursor) : std::nullopt;
    if (!offset) {
      return std::nullopt;
    }
    ms += *clock - *offset;
  }
  return cursor.done() && is_writable(ms) ? std::optional<int64_t>(ms) : std::nullopt;
}

std::optional<int64_t> parse_age_ms(std::string_view text) {
  static constexpr std::pair<char, double> k_units[] = {
      {'s', 1e3}, {'m', 6e4}, {'h', 3.6e6}, {'d', 8.64e7}, {'w', 6.048e8}};
  if (text.size() < 2) {
    return std::nullopt;
  }
  double count = 0;
  auto number = text.substr(0, text.size() - 1);
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), count);
  if (error != std::errc() || end != number.data() + number.size() || !(count > 0)) {
    return std::nullopt;
  }
  for (const auto& [unit, factor] : k_units) {
    if (text.back() == unit && count * factor < 1e15) {
      return std::llround(count * factor);
    }
  }
  return std::nullopt;
}

int64_t parse_time_spec(std::string_view text, int64_t now_ms, std::string_view option) {
  if (auto age = parse_age_ms(text)) {
    return now_ms - *age;
  }
  if (auto moment = parse_iso8601_ms(text)) {
    return *moment;
  }
  throw Fatal("bad time " + quoted(text) + " for --" + std::string(option) +
                  ": expected an ISO-8601 time (2024-05-01, 2024-05-01T12:30:00Z) or an age "
                  "(30m, 2h, 7d)",
              exit_code::k_usage);
}

std::string format_iso8601_ms(int64_t ms) {
  if (!is_writable(ms)) {
    return std::to_string(ms);  // a damaged or forged audit row: shown, never a crash
  }
  sys_time<milliseconds> moment{milliseconds{ms}};
  auto day_start = floor<days>(moment);
  year_month_day date{day_start};
  hh_mm_ss clock{moment - day_start};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", int{date.year()},
                     unsigned{date.month()}, unsigned{date.day()}, clock.hours().count(),
                     clock.minutes().count(), clock.seconds().count(), clock.subseconds().count());
}

std::string format_day(int64_t ms) {
  return format_iso8601_ms(ms).substr(0, 10);
}

}  // namespace sandshim::audit
