#include "common/terminal.hpp"

#include "common/environment.hpp"

#include <unistd.h>

#include <cstdlib>

namespace sandshim::terminal {

namespace {

std::string_view sgr_code(Style style) {
  switch (style) {
    case Style::bold:
      return "1";
    case Style::dim:
      return "2";
    case Style::red:
      return "31";
    case Style::green:
      return "32";
    case Style::yellow:
      return "33";
    case Style::cyan:
      return "36";
  }
  return "0";
}

}  // namespace

bool color_allowed(const char* no_color, const char* term) {
  bool no_color_set = no_color != nullptr && *no_color != '\0';
  bool dumb = term == nullptr || *term == '\0' || std::string_view(term) == "dumb";
  return !no_color_set && !dumb;
}

bool use_color(int fd) {
  auto no_color = environment::no_color();
  auto term = environment::term();
  return ::isatty(fd) == 1 &&
         color_allowed(no_color ? no_color->c_str() : nullptr, term ? term->c_str() : nullptr);
}

std::string paint(std::string_view text, Style style, bool enabled) {
  if (!enabled || text.empty()) {
    return std::string(text);
  }
  std::string painted = "\x1b[";
  painted += sgr_code(style);
  painted += 'm';
  painted += text;
  painted += "\x1b[0m";
  return painted;
}

}  // namespace sandshim::terminal
