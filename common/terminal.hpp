#pragma once

#include <string>
#include <string_view>

// Colour on terminals, plain text everywhere else. Knows nothing of sandshim.
namespace sandshim::terminal {

enum class Style { bold, dim, red, green, yellow, cyan };

// The environment's verdict alone: NO_COLOR set to anything non-empty (no-color.org), or TERM
// unset, empty or "dumb", forbids colour. Pure, so tests need not touch the real environment.
bool color_allowed(const char* no_color, const char* term);

// True when `fd` is a terminal and the environment allows colour: pipes and files stay plain.
bool use_color(int fd);

// `text` wrapped in the style's SGR escape when `enabled`, else unchanged.
std::string paint(std::string_view text, Style style, bool enabled);

}  // namespace sandshim::terminal
