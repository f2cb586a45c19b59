// The one encoder of caller bytes (common/escape.hpp), as properties over random input: whatever
// the bytes, the output is one line of printable, valid UTF-8 that decodes back to them.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "common/escape.hpp"
#include "common/strings.hpp"
#include "test_escape_support.hpp"

using namespace sandshim;
using namespace std::string_literals;
using sandshim::testing::has_raw_control;
using sandshim::testing::hostile_strings;

TEST_CASE("escape_text: fixed cases", "[common][escape]") {
  CHECK(escape_text("plain café ✓") == "plain café ✓");
  CHECK(escape_text("a\nb\r\x1b[31m\t\x00z"s) == "a\\x0ab\\x0d\\x1b[31m\\x09\\x00z");
  CHECK(escape_text("back\\slash") == "back\\\\slash");
  CHECK(escape_text("del \x7f c1 \xc2\x85 \xc2\x9b ls \xe2\x80\xa8") ==
        "del \\x7f c1 \\xc2\\x85 \\xc2\\x9b ls \\xe2\\x80\\xa8");
  CHECK(escape_text("bad \xff \xc0\xaf \xed\xa0\x80 \xe2\x82") ==
        "bad \\xff \\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82");
  CHECK(escape_text("abcdef", 3) == "abc...[+3 bytes]");
  CHECK(escape_text("ab\xc3\xa9", 3) == "ab...[+2 bytes]");  // never cuts a character
  CHECK(escape_text("ab\xff", 2) == "ab...[+1 bytes]");
  CHECK_FALSE(unescape_text("\\q").has_value());
  CHECK_FALSE(unescape_text("\\x4").has_value());
  CHECK(quoted("say \"hi\"\n"s) == "\"say \\\"hi\\\"\\x0a\"");
}

TEST_CASE("escape_text: one clean line that round-trips, for any bytes", "[common][escape]") {
  for (const std::string& text : hostile_strings(2000, 300)) {
    std::string escaped = escape_text(text, k_no_escape_cap);
    INFO("escaped: " << escaped);
    REQUIRE_FALSE(has_raw_control(escaped));
    REQUIRE(unescape_text(escaped) == text);
    std::string in_quotes = quoted(text);
    REQUIRE_FALSE(has_raw_control(in_quotes));
    REQUIRE((in_quotes.front() == '"' && in_quotes.back() == '"'));
  }
}

TEST_CASE("escape_text: huge input is cut at the cap with a marker", "[common][escape]") {
  std::string huge(1 << 20, '\n');
  std::string escaped = escape_text(huge);
  CHECK(escaped.size() == k_escape_cap * 4 + std::string("...[+1044480 bytes]").size());
  CHECK(escaped.ends_with("...[+1044480 bytes]"));
  CHECK(quoted(huge).size() < k_escape_cap * 4 + 32);
}

TEST_CASE("csv_escaped: one line a record, fields read back exactly", "[common][escape]") {
  auto strings = hostile_strings(600, 80);
  for (size_t i = 0; i + 3 <= strings.size(); i += 3) {
    std::string line;
    for (size_t j = i; j < i + 3; ++j) {
      line += (j == i ? "" : ",") + csv_escaped(strings[j]);
    }
    REQUIRE_FALSE(has_raw_control(line));
    auto fields = sandshim::testing::read_csv_line(line);
    REQUIRE(fields.size() == 3);
    for (size_t j = 0; j < 3; ++j) {
      REQUIRE(unescape_text(fields[j]) == strings[i + j]);
    }
  }
}

TEST_CASE("escape_json_controls: no raw control, same JSON value", "[common][escape]") {
  for (const std::string& text : hostile_strings(1000, 120)) {
    nlohmann::json value = {{"text", text}, {"list", {text, 1}}};
    std::string dumped = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string escaped = escape_json_controls(dumped);
    REQUIRE_FALSE(has_raw_control(escaped));
    REQUIRE(nlohmann::json::parse(escaped) == nlohmann::json::parse(dumped));
  }
  CHECK(escape_json_controls("[\"\x7f\xc2\x85\xe2\x80\xa9\"]") == "[\"\\u007f\\u0085\\u2029\"]");
  CHECK(escape_json_controls("{\n  \"a\": 1\n}") == "{\n  \"a\": 1\n}");  // indentation stays
}
