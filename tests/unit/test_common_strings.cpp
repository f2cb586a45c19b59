#include <catch2/catch.hpp>

#include "common/strings.hpp"

using namespace sandshim;

TEST_CASE("shell quoting round-trips through sh", "[strings]") {
  CHECK(shell_quote("plain-word_1.2") == "plain-word_1.2");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("a b;$(x)") == "'a b;$(x)'");
  CHECK(shell_join({"echo", "a b"}) == "echo 'a b'");
}

TEST_CASE("untrusted text is quoted for messages", "[strings]") {
  CHECK(quoted(std::string("a\nb\"c")) == "\"a\\x0ab\\\"c\"");
}

TEST_CASE("sizes and durations parse as users write them", "[strings]") {
  CHECK(parse_byte_size("512m") == 512ULL << 20);
  CHECK(parse_byte_size("1g") == 1ULL << 30);
  CHECK(parse_byte_size("64K") == 64ULL << 10);
  CHECK(parse_byte_size("100") == 100ULL);
  CHECK_FALSE(parse_byte_size("lots"));
  CHECK_FALSE(parse_byte_size("-1m"));
  CHECK_FALSE(parse_byte_size("1.2.3m"));
  CHECK_FALSE(parse_byte_size("99999999999999999999g"));
  CHECK(parse_duration_ms("30") == 30000);
  CHECK(parse_duration_ms("1.5s") == 1500);
  CHECK(parse_duration_ms("2m") == 120000);
  CHECK(parse_duration_ms("250ms") == 250);
  CHECK_FALSE(parse_duration_ms("0"));
  CHECK_FALSE(parse_duration_ms("soon"));
  CHECK(format_byte_size(512ULL << 20) == "512m");
  CHECK(format_duration_ms(30000) == "30s");
}

TEST_CASE("globs match whole names", "[strings]") {
  CHECK(glob_match("*TOKEN*", "GITHUB_TOKEN"));
  CHECK(glob_match("LC_*", "LC_ALL"));
  CHECK_FALSE(glob_match("LC_*", "XLC_ALL"));
}

TEST_CASE("texts split into lines as getline reads them", "[strings]") {
  using Lines = std::vector<std::string>;
  CHECK(split_lines("").empty());
  CHECK(split_lines("a") == Lines{"a"});
  CHECK(split_lines("a\n") == Lines{"a"});
  CHECK(split_lines("a\n\nb") == Lines{"a", "", "b"});
  CHECK(split_lines("\n") == Lines{""});
}

TEST_CASE("a text's first line ends at its first newline, or is all of it", "[strings]") {
  CHECK(first_line_of("").empty());
  CHECK(first_line_of("one") == "one");
  CHECK(first_line_of("one\ntwo\n") == "one");
  CHECK(first_line_of("\ntwo").empty());
}
