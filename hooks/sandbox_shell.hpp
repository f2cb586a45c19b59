#pragma once

// `sandshim -c SCRIPT`: the shell of an agent that runs its commands through a shell prefix
// (Claude Code's CLAUDE_CODE_SHELL_PREFIX in wrap mode). SCRIPT runs whole in the wrap image.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandshim::hooks {

// The command Claude Code wraps in its script (`… && eval '<command>' < /dev/null && …`), as
// its PreToolUse hook saw it; nullopt when the script holds no single such eval.
std::optional<std::string> claude_eval_command(std::string_view script);

// What `sandshim -c SCRIPT` runs: the `sandshim run` arguments, and the variables that join
// the run to the agent's session and, when the decision for the command is found in the
// audit, to its tool use. `environment`: NAME=VALUE entries of the caller.
struct SandboxShellRun {
  std::vector<std::string> run_args;
  std::vector<std::pair<std::string, std::string>> link;
  // The command Claude Code evaluates, when its decision was not found here (a broker's audit
  // is not the caller's to read): the broker finds it (broker::RunCall::agent_command).
  std::string agent_command;
};
SandboxShellRun sandbox_shell_run(const std::string& script,
                                  const std::vector<std::string>& environment);

// Claude Code in path mode puts the shims on PATH through its session environment, which names
// the session but not the tool call: a shim finds the call from Claude Code's shell among its
// ancestors (the command in its script's eval) and the session's unfinished decision for that
// command. Nullopt outside such a session, when the run carries its id already, or when none
// is found (the run is then joined by session alone).
// First the command (the eval'd command of Claude Code's shell among the ancestors): what a
// broker's client sends, for the broker to find the caller's own decision in its audit.
std::optional<std::string> claude_path_mode_command(const std::vector<std::string>& environment);
// Then, without a broker, that command's unfinished decision in the caller's own audit.
std::optional<std::string> claude_path_mode_tool_use_id(const std::vector<std::string>& environment,
                                                        const std::string& command);

}  // namespace sandshim::hooks
