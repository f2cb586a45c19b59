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

// In path mode Claude Code and Gemini CLI put the shims on PATH for a whole session (Claude
// Code's session environment, Gemini CLI's BASH_ENV), which names no tool call: a shim finds
// the call from the agent's shell (the command in the eval of Claude Code's script, among the
// shim's ancestors; Gemini CLI's bash -c string after its `shopt -u …;` guard, which sandshim's
// BASH_ENV script exports as SANDSHIM_SHELL_COMMAND) and the agent's unfinished decision
// for exactly that command (Claude Code: in its session; Gemini CLI names none to its shell: the
// caller's newest). Nullopt outside such a shell, when the run carries its id already, or when
// none is found (the run is then joined by session alone, or by nothing).
struct AgentShellCommand {
  std::string agent;    // the audit's name: claude-code, gemini-cli
  std::string session;  // "" when the agent's shell does not name it
  std::string command;
};
// First the command: what a broker's client sends, for the broker to find the caller's own
// decision in its audit.
std::optional<AgentShellCommand> path_mode_command(const std::vector<std::string>& environment);
// Then, without a broker, that command's unfinished decision in the caller's own audit.
std::optional<std::string> path_mode_tool_use_id(const AgentShellCommand& command);

// The command Gemini CLI's bash runs: its script is `shopt -u …; COMMAND`.
std::optional<std::string> gemini_shell_command(std::string_view script);

}  // namespace sandshim::hooks
