#include <cstdio>
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "common/terminal.hpp"
#include "test_shell_support.hpp"

using namespace sandshim::terminal;
using Catch::Matchers::Contains;
using sandshim::test::output_of;

namespace {

bool have_script() {
  return std::system("command -v script >/dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("colour is allowed unless NO_COLOR is set or TERM is dumb or missing", "[terminal]") {
  CHECK(color_allowed(nullptr, "xterm-256color"));
  CHECK(color_allowed("", "xterm"));  // an empty NO_COLOR does not count (no-color.org)
  CHECK_FALSE(color_allowed("1", "xterm"));
  CHECK_FALSE(color_allowed("0", "xterm"));  // any non-empty value, even 0
  CHECK_FALSE(color_allowed(nullptr, "dumb"));
  CHECK_FALSE(color_allowed(nullptr, ""));
  CHECK_FALSE(color_allowed(nullptr, nullptr));
}

TEST_CASE("paint wraps text in an SGR escape only when enabled", "[terminal]") {
  CHECK(paint("ok", Style::green, true) == "\x1b[32mok\x1b[0m");
  CHECK(paint("ok", Style::green, false) == "ok");
  CHECK(paint("", Style::bold, true).empty());
}

TEST_CASE("use_color is false for a pipe", "[terminal]") {
  CHECK_FALSE(use_color(-1));
}

// The binary through a pseudo-terminal (script(1)), through a pipe, and with NO_COLOR.
TEST_CASE("sandshim policy show is coloured on a pty, plain in a pipe or with NO_COLOR",
          "[terminal][cli]") {
  if (!have_script()) {
    WARN("script(1) is not installed (bsdutils): the pty case is not checked");
    return;
  }
  std::string bin = SANDSHIM_BINARY;
  std::string on_pty =
      output_of("env -u NO_COLOR TERM=xterm script -qec '" + bin + " policy show' /dev/null");
  CHECK_THAT(on_pty, Contains("\x1b[1msandbox.memory\x1b[0m"));
  CHECK_THAT(on_pty, Contains("\x1b[2mdefault\x1b[0m") || Contains("\x1b[33m"));
  std::string no_color =
      output_of("NO_COLOR=1 TERM=xterm script -qec '" + bin + " policy show' /dev/null");
  CHECK_THAT(no_color, Contains("sandbox.memory"));
  CHECK_THAT(no_color, !Contains("\x1b["));
  std::string dumb =
      output_of("env -u NO_COLOR TERM=dumb script -qec '" + bin + " policy show' /dev/null");
  CHECK_THAT(dumb, !Contains("\x1b["));
  std::string piped = output_of("env -u NO_COLOR TERM=xterm " + bin + " policy show | cat");
  CHECK_THAT(piped, Contains("sandbox.memory"));
  CHECK_THAT(piped, !Contains("\x1b["));
}
