#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace sandshim::hooks {

using NameSet = std::set<std::string, std::less<>>;

// What a command name means for the sandbox.
enum class CommandClass {
  interpreter,  // runs code it is given: python, node, perl, ruby… and every shimmed non-shell
  shell,  // sh, bash, dash…: a host shell is the agent's own shell, so its script is checked
  other,  // git, ls, make…: runs on the host as before
};

// Shells are transparent: what they run is analysed like the agent's own command line.
bool is_shell_name(std::string_view name);

// The interpreters sandshim knows whether or not the policy shims them: called by path they would
// run outside the sandbox, so they must be called by name.
bool is_known_interpreter(std::string_view name);

// Classifies a command's last path component under the policy's set of shimmed names.
CommandClass classify_name(std::string_view name, const NameSet& shimmed);

// The name to suggest instead of an interpreter path: "python3.11" -> "python3" when only that
// is shimmed, so the suggestion is one the sandbox will actually catch.
std::string sandboxed_name_for(std::string_view name, const NameSet& shimmed);

// Shell builtins and keywords: never looked up on PATH, so never a file to inspect.
bool is_shell_builtin(std::string_view name);

}  // namespace sandshim::hooks
