#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim::hooks {

// The image wrap mode runs whole commands in: sh, bash, python3, node, git, make, coreutils.
inline constexpr std::string_view k_wrap_image = "sandshim/wrap:bookworm";

// Who asked for a command: exported to it so the shim can join its runs to the decision.
struct RunLink {
  std::string agent;        // SANDSHIM_AGENT: the agent's audit_name (claude-code, codex…)
  std::string session_id;   // SANDSHIM_SESSION_ID
  std::string tool_use_id;  // SANDSHIM_TOOL_USE_ID
};

// Prefixes the command with `export PATH=<shim dir>${PATH:+:"$PATH"} SANDSHIM_…=…; ` so every
// python/node/sh it reaches by name is the shim. Only a prefix: the original text follows
// unchanged, so quotes, here-documents, `cd`, pipes, exit codes and a trailing comment behave
// exactly as before.
std::string route_through_shims(std::string_view command, const std::filesystem::path& shim_dir,
                                const RunLink& link);

// The same routing for an agent that judges its own rules on the command it is given, after
// the rewrite (Codex): `. <script> <agent> <session> <tool use> && COMMAND`, all plain words,
// which the agent's parser reads as two simple commands, so its rules judge COMMAND's own words
// (`install agent codex` writes the script, routing_script_text, and a rule that allows it).
// Nullopt when a word would need quotes: the export form then.
std::optional<std::string> route_through_script(std::string_view command,
                                                const std::filesystem::path& script,
                                                const RunLink& link);

// Shell lines that put `shim_dir` first on PATH, once (no empty entry when PATH was empty), and
// export it: the start of every script sandshim has an agent's shell read.
std::string shims_first_lines(const std::filesystem::path& shim_dir);

// What that script holds: the shims first on PATH (once), the run's link from its arguments.
std::string routing_script_text(const std::filesystem::path& shim_dir);

// The original command when `command` already carries a routing prefix for `shim_dir` or
// through `script` (a second hook seeing the rewritten command must neither refuse nor rewrite
// it again).
std::optional<std::string_view> strip_routing(std::string_view command,
                                              const std::filesystem::path& shim_dir,
                                              const std::filesystem::path& script = {});

// The original command when `command` carries a routing prefix for any shim directory: what
// an agent reports back after running a rewritten command, for matching it to its decision.
std::optional<std::string_view> strip_any_routing(std::string_view command);

// `SANDSHIM_…=… <sandshim> run [--wrap-shell] --image <wrap image> -- bash -c '<command>'`: the
// whole command runs in a container. The host shell sees only literal words (every value
// shell-quoted), so nothing of the command (redirections, expansions, assignments, loops) runs on
// the host. `whole_shell`: it is the agent's shell (hook.mode = wrap), which
// sandbox.workspace = wrap lets write the workspace.
enum class ShellRole { part, whole_shell };
std::string wrap_in_sandbox(std::string_view command, const std::filesystem::path& sandshim,
                            std::string_view image, const RunLink& link, ShellRole role);

// Claude Code's CLAUDE_CODE_SHELL_PREFIX for wrap mode, `<sandshim> -c`: Claude Code runs each
// Bash command as `'<sandshim>' -c '<its whole script>'` (it quotes what comes before the last
// " -"), so sandshim's shell entry runs all of it in the wrap image, and nothing on the host.
std::string sandbox_shell_prefix(const std::filesystem::path& sandshim);

// True when `value` is that prefix naming this very binary (by file, not by spelling).
bool is_sandbox_shell_prefix(std::string_view value, const std::filesystem::path& sandshim);

}  // namespace sandshim::hooks
