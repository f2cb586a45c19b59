#include "hooks/refusal_rules.hpp"

#include <algorithm>
#include <array>

namespace sandshim::hooks {

namespace {

struct RuleLift {
  std::string_view rule;
  std::string_view line;  // "" when no configuration lifts it
  std::string_view note;  // what the line does, or why nothing lifts the rule
};

constexpr std::string_view k_wrap = "hook.mode = wrap";
constexpr std::string_view k_wrap_note = "the whole command then runs in the sandbox";

// Path and deny mode's rules are about commands running on the host: in wrap mode the whole
// command runs in the container, so none of them applies there.
constexpr std::array<RuleLift, 39> k_rule_lifts = {{
    {"unanalysable", k_wrap, k_wrap_note},
    {"path-override", k_wrap, k_wrap_note},
    {"protected-variable", k_wrap, k_wrap_note},
    {"hash-pinning", k_wrap, k_wrap_note},
    {"dynamic-command", k_wrap, k_wrap_note},
    {"interpreter-by-path", k_wrap, k_wrap_note},
    {"engine-access", k_wrap, k_wrap_note},
    {"loader", k_wrap, k_wrap_note},
    {"interpreter-copy", k_wrap, k_wrap_note},
    {"hidden-command", k_wrap, k_wrap_note},
    {"command-variable", k_wrap, k_wrap_note},
    {"protected-write", k_wrap, k_wrap_note},
    {"unresolved-write", k_wrap, k_wrap_note},
    {"venv-activation", k_wrap, k_wrap_note},
    {"venv-by-path", k_wrap, k_wrap_note},
    {"launcher-bypass", k_wrap, k_wrap_note},
    {"shebang-bypass", k_wrap, k_wrap_note},
    {"package-install", k_wrap, k_wrap_note},
    {"privilege-escalation", k_wrap, k_wrap_note},
    {"env-cleared", k_wrap, k_wrap_note},
    {"default-path", k_wrap, k_wrap_note},
    {"argv0-renamed", k_wrap, k_wrap_note},
    {"sandshim-run-flag", "", "the option's own key in the user's config does what it would"},
    {"interpreter-not-shimmed", "images.NAME = IMAGE",
     "a shim for NAME, once the user runs `sandshim install`"},
    {"interpreter-outside-sandbox", "hook.mode = path",
     "interpreters reached by name then go to the sandbox"},
    {"unknown-mode", "hook.mode = path", "or wrap, or deny"},
    {"audit-unavailable", "audit.required = false", "the command then runs unrecorded"},
    {"unparseable", "", "nothing runs unread"},
    {"self-tamper", "", "the sandbox's setup is the user's"},
    {"protected-path", "", "the sandbox depends on the file"},
    {"cannot-rewrite", "", "this agent applies no rewrite"},
    {"shim-not-installed", "", "`sandshim install` restores the shim"},
    {"policy-refused", "", "the user's config must be fixed first"},
    {"internal-error", "", "nothing runs unchecked"},
    {"invalid-payload", "", "nothing runs unchecked"},
    {"payload-too-large", "", "nothing runs unchecked"},
    {"unknown-agent", "", "nothing runs unchecked"},
    {"unknown-event", "", "nothing runs unchecked"},
    {"event-mismatch", "", "nothing runs unchecked"},
}};

const RuleLift* lift_of(std::string_view rule) {
  auto found = std::find_if(k_rule_lifts.begin(), k_rule_lifts.end(),
                            [&](const RuleLift& lift) { return lift.rule == rule; });
  return found == k_rule_lifts.end() ? nullptr : &*found;
}

}  // namespace

std::string_view lifting_line(std::string_view rule) {
  const RuleLift* lift = lift_of(rule);
  return lift == nullptr ? "" : lift->line;
}

std::string rule_footer(std::string_view rule) {
  std::string footer = "Rule `" + std::string(rule) + "`; ";
  const RuleLift* lift = lift_of(rule);
  if (lift == nullptr || lift->line.empty()) {
    return footer + "no configuration lifts it" +
           (lift == nullptr ? "" : " (" + std::string(lift->note) + ")") + ".";
  }
  return footer + "`" + std::string(lift->line) + "` in the user's config lifts it (" +
         std::string(lift->note) + ").";
}

std::string with_rule_footer(std::string_view reason, std::string_view rule) {
  std::string out(reason);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) {
    out.pop_back();
  }
  if (!out.empty() && out.back() != '.') {
    out += '.';
  }
  return out + " " + rule_footer(rule);
}

}  // namespace sandshim::hooks
