#pragma once

#include <string>
#include <string_view>

namespace sandshim::hooks {

// Every refusal ends by naming its rule and the configuration line that lifts it (or that none
// does), so the agent can tell the user exactly what to change: issue 24, "a refusal is a way
// forward". The lines are real keys of policy/key_table.cpp; `test_hooks_refusal_rules.cpp`
// checks each against the key table.

// The user's configuration line that lifts `rule` ("hook.mode = wrap"), or "" when none does.
std::string_view lifting_line(std::string_view rule);

// The end of a refusal for `rule`: "Rule `shebang-bypass`; `hook.mode = wrap` in the user's
// config lifts it (…)." or "Rule `self-tamper`; no configuration lifts it (…)."
std::string rule_footer(std::string_view rule);

// `reason` with its rule's footer after it, on the same line.
std::string with_rule_footer(std::string_view reason, std::string_view rule);

}  // namespace sandshim::hooks
