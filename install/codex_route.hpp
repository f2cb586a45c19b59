#pragma once

// Codex's route to the shims that keeps its rules working. Codex judges its prefix rules on
// the command after a PreToolUse rewrite, and reads `export PATH=…; COMMAND` as one opaque
// script that no rule matches. So its routed commands source a script instead,
// `. <script> AGENT SESSION TOOL_USE && COMMAND`, all plain words, which Codex reads as two
// simple commands: COMMAND's own words meet the user's rules, and a rule sandshim adds in its
// own rules file allows the first.

#include <filesystem>
#include <string>

#include "install/agent_settings.hpp"

namespace sandshim::install {

struct CodexRouteChange {
  Change change = Change::unchanged;
  std::filesystem::path file;  // the rules file
  std::string note;
};

// Writes the routing script (for `shim_dir`) and sandshim's rules file in Codex's rules
// directory; with `uninstall`, removes the rules file.
CodexRouteChange update_codex_route(const std::filesystem::path& shim_dir, bool uninstall,
                                    bool dry_run);

// The rule sandshim's rules file holds: `. <script>` allowed (Codex then runs it without
// asking, as it does the command after it when the user's own rules allow that).
std::string codex_route_rule(const std::filesystem::path& script);

}  // namespace sandshim::install
