// Inputs the fuzz targets (tests/fuzz) found crashing or breaking an invariant, kept here so the
// unit suite, and its sanitizer run, fails if one comes back. Each test names its target.

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "audit/time_spec.hpp"
#include "common/strings.hpp"
#include "hooks/shell_parser.hpp"
#include "policy/policy.hpp"

using namespace sandshim;

namespace {

// The bytes of a finding as libFuzzer wrote them, given in hex (they hold NULs and non-UTF-8).
std::string from_hex(std::string_view hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return bytes;
}

}  // namespace

// fuzz_time_spec: a start_ms from a damaged audit row overflowed std::chrono's day arithmetic
// (UBSan: signed integer overflow in chrono.h).
TEST_CASE("fuzz: any time from the audit formats without overflow", "[fuzz][audit][time]") {
  for (int64_t ms : {std::numeric_limits<int64_t>::min(), int64_t{-9'223'372'036'854'775'689},
                     std::numeric_limits<int64_t>::max(), int64_t{-62'167'219'200'001},
                     int64_t{253'402'300'800'000}}) {
    CAPTURE(ms);
    CHECK(audit::format_iso8601_ms(ms) == std::to_string(ms));
  }
  CHECK(audit::format_iso8601_ms(-62'167'219'200'000) == "0000-01-01T00:00:00.000Z");
  CHECK(audit::format_iso8601_ms(253'402'300'799'999) == "9999-12-31T23:59:59.999Z");
}

// Found while fixing the above: the fuzz target's read-back invariant cannot hold for a time
// whose offset carries it out of the years 0000 to 9999, so those are refused.
TEST_CASE("fuzz: ISO-8601 times read back, or are refused", "[fuzz][audit][time]") {
  CHECK_FALSE(audit::parse_iso8601_ms("0000-01-01T00:00+00:01"));
  CHECK_FALSE(audit::parse_iso8601_ms("9999-12-31T23:59-01:00"));
  CHECK(audit::parse_iso8601_ms("0000-01-01T00:00Z") == -62'167'219'200'000);
  CHECK(audit::parse_iso8601_ms("9999-12-31T23:59:59.999Z") == 253'402'300'799'999);
}

// fuzz_argv_path: shell_join left `pyt=hon3` bare, and bash read the first word as an
// assignment instead of the command name: one word fewer than was joined.
TEST_CASE("fuzz: a word that looks like an assignment is quoted", "[fuzz][strings]") {
  CHECK(shell_quote("pyt=hon3") == "'pyt=hon3'");
  CHECK(shell_quote("PATH+=/x") == "'PATH+=/x'");
  CHECK(shell_join({"pyt=hon3", "-c", "print('hi')"}) == "'pyt=hon3' -c 'print('\\''hi'\\'')'");
  auto parse = hooks::parse_shell(shell_join({"pyt=hon3", "-c", "print('hi')"}));
  REQUIRE(parse.commands.size() == 1);
  CHECK(parse.commands[0].assignments.empty());
  CHECK(parse.commands[0].words.size() == 3);
  // Not an assignment in any position: stays readable.
  CHECK(shell_quote("--network=none") == "--network=none");
  CHECK(shell_quote("/opt/a=b") == "/opt/a=b");
  CHECK(shell_quote("1a=b") == "1a=b");
}

// fuzz_argv_path: shell_join({"do"}) was the bare reserved word `do`, a syntax error as a command.
TEST_CASE("fuzz: a reserved word is quoted", "[fuzz][strings]") {
  CHECK(shell_quote("do") == "'do'");
  CHECK(shell_quote("time") == "'time'");
  auto parse = hooks::parse_shell(shell_join({"do"}));
  CHECK_FALSE(parse.error);
  REQUIRE(parse.commands.size() == 1);
  CHECK(parse.commands[0].words[0].value == "do");
  CHECK(shell_quote("done-list") == "done-list");
}

// fuzz_shell_parser: a word that reads as nothing inside [[ ]] (here after `<{` and bytes no word
// starts with) left the conditional's loop spinning forever: a hook that never answers.
TEST_CASE("fuzz: a [[ ]] the parser cannot read is refused, not spun on", "[fuzz][hooks][parser]") {
  const std::string input = from_hex(
      "7079746c6f016628295b5b205b3c7bffffffffffffffffffffffffffffffff2f"
      "3e5b5b3c4e4f000000d9796e74283166650a2978");
  auto parse = hooks::parse_shell(input);
  CHECK(parse.error.has_value());
}

// fuzz_shell_parser (LeakSanitizer): a here-document registered for a redirection its command did
// not keep; its body was written past the command's redirections (a leak, and memory misuse).
TEST_CASE("fuzz: a here-document without its redirection is refused", "[fuzz][hooks][parser]") {
  const std::string input = from_hex(
      "707974686f6e33203c3c707928296f6e37203c3c450a6c6926daad8d5d742626"
      "26260a6c9769696460202428286e762d74283029");
  auto parse = hooks::parse_shell(input);
  CHECK(parse.error.has_value());
}

// fuzz_policy (timeout): an invalid line holding "%invalid_line%" made Boost's error message
// substitute itself forever; the file is refused with the line named.
TEST_CASE("fuzz: an invalid config line naming Boost's placeholder is refused, not spun on",
          "[fuzz][policy]") {
  const std::string text = "[sandbox]\nmemory = 1g\ncp %invalid_line% x\n";
  std::string error;
  try {
    shim::parse_config_text(text, "fuzz.conf");
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains("fuzz.conf") && Catch::Contains("%invalid_line%"));
}
