#include "hooks/sandbox_shell.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "audit/store.hpp"
#include "common/env_list.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/shell_parser.hpp"
#include "policy/broker_policy.hpp"
#include "policy/policy.hpp"

namespace sandshim::hooks {

namespace {

constexpr std::string_view k_claude_audit_name = "claude-code";
constexpr std::string_view k_gemini_audit_name = "gemini-cli";
// What Gemini CLI 0.61 puts before every command it gives bash (BASH_SHOPT_GUARD).
constexpr std::string_view k_gemini_shell_guard = "shopt -u ";

std::string value_of(const std::vector<std::string>& environment, std::string_view name) {
  return env_value(environment, name).value_or("");
}

// The decision the hook recorded for this command, read from the audit; "" when there is none
// or the audit cannot be read (a broker's database is not the caller's to read).
std::string tool_use_id_of(std::string_view agent, const std::string& session,
                           const std::string& command) {
  try {
    std::error_code ec;
    shim::Policy policy = shim::load_policy(
        shim::policy_inputs(shim::broker_policy_source(), std::filesystem::current_path(ec)));
    audit::StoreOptions options;
    options.path = policy.effective_audit_db();
    options.read_only = true;
    options.create = false;
    return audit::Store::open(options).pending_tool_use_id(std::string(agent), session, command);
  } catch (const std::exception& e) {
    spdlog::debug("sandbox shell: no decision found for the command: {}", e.what());
    return "";
  }
}

// How far up the process tree Claude Code's shell may be (make → sh → python3 is three).
constexpr int k_max_ancestors = 16;

std::string proc_file(pid_t pid, const char* name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The parent's pid from /proc/PID/stat: the field after the state, behind the last ')'.
pid_t parent_pid(pid_t pid) {
  std::string stat = proc_file(pid, "stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) {
    return 0;
  }
  return static_cast<pid_t>(std::atoi(stat.c_str() + close + 4));
}

// The command in the eval of Claude Code's script, if `pid` is the shell running one.
std::optional<std::string> eval_command_of(pid_t pid) {
  std::string cmdline = proc_file(pid, "cmdline");
  for (size_t start = cmdline.find('\0'); start != std::string::npos && start + 1 < cmdline.size();
       start = cmdline.find('\0', start + 1)) {
    std::string_view argument(cmdline.c_str() + start + 1);
    if (argument.find("eval ") != std::string_view::npos) {
      if (std::optional<std::string> command = claude_eval_command(argument)) {
        return command;
      }
    }
  }
  return std::nullopt;
}

// The eval'd command of Claude Code's shell among this process's ancestors.
std::optional<std::string> claude_shell_command() {
  pid_t pid = ::getppid();
  for (int level = 0; level < k_max_ancestors && pid > 1; ++level, pid = parent_pid(pid)) {
    if (std::optional<std::string> command = eval_command_of(pid)) {
      return command;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> claude_eval_command(std::string_view script) {
  ShellParse parse = parse_shell(script);
  std::optional<std::string> found;
  for (const SimpleCommand& command : parse.commands) {
    if (command.words.size() == 2 && command.words[0].value == "eval") {
      if (found) {
        return std::nullopt;
      }
      found = command.words[1].value;
    }
  }
  return parse.error ? std::nullopt : found;
}

SandboxShellRun sandbox_shell_run(const std::string& script,
                                  const std::vector<std::string>& environment) {
  SandboxShellRun run{
      {"--wrap-shell", "--image", std::string(k_wrap_image), "--", "bash", "-c", script}, {}, ""};
  std::string session = value_of(environment, "CLAUDE_CODE_SESSION_ID");
  if (session.empty() || !value_of(environment, "SANDSHIM_SESSION_ID").empty()) {
    return run;
  }
  run.link = {{"SANDSHIM_AGENT", std::string(k_claude_audit_name)},
              {"SANDSHIM_SESSION_ID", session}};
  if (std::optional<std::string> command = claude_eval_command(script)) {
    std::string tool_use_id = tool_use_id_of(k_claude_audit_name, session, *command);
    if (!tool_use_id.empty()) {
      run.link.emplace_back("SANDSHIM_TOOL_USE_ID", tool_use_id);
    } else {
      run.agent_command = *command;
    }
  }
  return run;
}

std::optional<std::string> gemini_shell_command(std::string_view script) {
  if (!script.starts_with(k_gemini_shell_guard)) {
    return std::nullopt;
  }
  size_t end = script.find("; ");
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view command = script.substr(end + 2);
  // Gemini CLI 0.61 runs the command, trimmed, in a subshell that records its background jobs
  // (wrapCommandForBackgroundPIDs): `_bgpids_file=F\n(\n  trap … EXIT\nCOMMAND\n)\n__code=…`.
  constexpr std::string_view k_open = "\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n";
  constexpr std::string_view k_close = "\n)\n__code=$?\nexit $__code";
  if (command.starts_with("_bgpids_file=")) {
    size_t open = command.find(k_open);
    if (open == std::string_view::npos || !command.ends_with(k_close)) {
      return std::nullopt;
    }
    command = command.substr(open + k_open.size());
    command.remove_suffix(k_close.size());
    if (command.ends_with("\\ ")) {
      command.remove_suffix(1);  // the space it adds after a trailing backslash
    }
  }
  return std::string(command);
}

std::optional<AgentShellCommand> path_mode_command(const std::vector<std::string>& environment) {
  if (!value_of(environment, "SANDSHIM_TOOL_USE_ID").empty()) {
    return std::nullopt;
  }
  std::string session = value_of(environment, "SANDSHIM_SESSION_ID");
  if (value_of(environment, "SANDSHIM_AGENT") == k_claude_audit_name && !session.empty()) {
    if (auto command = claude_shell_command()) {
      return AgentShellCommand{std::string(k_claude_audit_name), session, *command};
    }
    return std::nullopt;
  }
  // Gemini CLI's bash runs the command last, so the shim is that process, not its child: the
  // BASH_ENV script sandshim installs keeps the command string (install/gemini_env.cpp).
  if (value_of(environment, "GEMINI_CLI") == "1") {
    if (auto command = gemini_shell_command(value_of(environment, "SANDSHIM_SHELL_COMMAND"))) {
      return AgentShellCommand{std::string(k_gemini_audit_name), "", *command};
    }
  }
  return std::nullopt;
}

std::optional<std::string> path_mode_tool_use_id(const AgentShellCommand& command) {
  std::string tool_use_id = tool_use_id_of(command.agent, command.session, command.command);
  return tool_use_id.empty() ? std::nullopt : std::optional(tool_use_id);
}

}  // namespace sandshim::hooks
