#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "hooks/interpreters.hpp"
#include "hooks/protected_paths.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/shell_analysis.hpp"

namespace sandshim::hooks {

enum class Verdict {
  allow,    // runs as written
  rewrite,  // runs as `rewritten_command`
  deny,     // does not run; `reason` tells the model what to run instead
};

struct Decision {
  Verdict verdict = Verdict::allow;
  std::string rule;    // the rule that decided: "path-rewrite", "interpreter-by-path", …
  std::string reason;  // for the model when denied, for the user otherwise
  std::string rewritten_command;
  bool confirm = false;  // the user approves the rewritten command first (agents that can ask)
};

// Everything the policy needs to know about one shell command's situation.
struct DecisionInputs {
  std::string mode = "path";  // hook.mode: path | wrap | deny
  bool can_rewrite = true;    // the agent applies a rewritten command (Windsurf cannot)
  NameSet shimmed;            // policy images: the names with a shim
  std::filesystem::path shim_dir;
  std::filesystem::path sandshim;  // this binary, for `sandshim run` suggestions
  std::string wrap_image = std::string(k_wrap_image);  // where wrap mode runs whole commands
  // The agent's own shell runs every command in the wrap image (Claude Code with sandshim's
  // CLAUDE_CODE_SHELL_PREFIX); `shell_prefix_agent`: the agent could, once installed so.
  bool shell_in_sandbox = false;
  bool shell_prefix_agent = false;
  bool shim_dir_first_on_path = false;  // the agent's own PATH already starts with the shims
  // And so does the PATH of the command judged (the agent's shell and its hooks share one
  // environment): a rewrite would add nothing, and would keep the user's rules from matching.
  bool command_path_has_shims = false;
  // The agent's routing script, when it has one and it is installed: routed commands source it.
  std::filesystem::path routing_script;
  std::function<bool(const std::string& name)> shim_installed;  // the link for name exists
  std::function<std::optional<std::string>(const std::string& command)> first_line_of;
  // What the analysis may read of the host (shell_analysis.hpp): files, scripts, protected paths.
  std::function<std::optional<std::filesystem::path>(const std::string& command)> locate;
  std::function<std::optional<std::string>(const std::filesystem::path& file)> known_program_of;
  std::function<std::optional<std::string>(const std::filesystem::path& file)> read_script;
  // Only root can have written the file (program_files.hpp, owned_by_system); empty: none is.
  std::function<bool(const std::filesystem::path& file)> owned_by_system;
  std::filesystem::path cwd;
  std::filesystem::path home;
  std::filesystem::path workspace;  // what the sandbox mounts: the git root, else cwd
  std::string python_image;         // where `sandshim run -- VENV/bin/python` would run
  // The caller's own `sandshim run` may choose its image (`--image host`): not through a required
  // broker, whose system file alone names images.
  bool image_choice = true;
  // An agent's whole shell command (`sandshim -c`) may write the workspace: direct mode, where
  // `sandbox.workspace` is wrap (the default) or rw and the engine is local.
  bool wrap_shell_writes = false;
  ProtectedPaths protected_paths;
  // The agent's environment, by name: `$NAME` in a write target (hooks/word_values.hpp).
  std::function<std::optional<std::string>(const std::string& name)> variable;
  RunLink link;
};

// Applies hook.mode to a shell command: `path` reroutes interpreters through the shims by
// rewriting PATH and refuses every way around them; `wrap` runs the whole command in a
// container; `deny` refuses interpreters that do not go through sandshim. Unparseable input is
// refused in every mode.
Decision decide(std::string_view command, const DecisionInputs& inputs);

// The analysis `decide` runs, with what it may read of the host: for callers and tests that
// need the analysis itself.
AnalysisOptions analysis_options(const DecisionInputs& inputs);

}  // namespace sandshim::hooks
