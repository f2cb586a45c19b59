#include "hooks/commands.hpp"

#include <unistd.h>

#include <array>
#include <boost/program_options.hpp>
#include <cerrno>
#include <iostream>

#include "common/strings.hpp"
#include "hooks/hook_run.hpp"
#include "shim/commands.hpp"

namespace sandshim::hooks {

namespace po = boost::program_options;

namespace {

const char* const k_usage =
    R"(sandshim hook [--agent AGENT] [--event EVENT] [--rewrite-approval auto|allow|ask]

An AI coding agent runs this before (and after) each shell command it issues. It reads the
agent's hook event as JSON on stdin and answers on stdout in that agent's own format: exactly
one JSON object, nothing else (Windsurf reads only the exit code). `sandshim install agent NAME`
writes the agent's configuration for you.

What it decides depends on the policy's hook.mode:
  path  (default) rewrite the command so the shim directory comes first on PATH: python, node
        and sh reached by name run in the sandbox, everything else (git, make, ls) as before.
        Refused, with what to run instead: interpreters called by path (/usr/bin/python3,
        ./venv/bin/python), PATH replaced, env -i, command -p, exec -a, sudo, eval, scripts
        whose #! line names an interpreter by path, SANDSHIM_*/DOCKER_*/LD_PRELOAD settings.
  wrap  run the whole command, as given, in `sandshim run --image WRAP_IMAGE -- bash -c '…'`.
  deny  refuse interpreters that do not go through sandshim; nothing is rewritten.
A command sandshim cannot parse, an oversized payload (over 1 MiB), an unknown event and any
internal error are refused in the way the agent honours (Claude Code and Codex: exit 2 with the
reason on stderr; Cursor: exit 2; Gemini: a JSON deny; Windsurf: exit 2). Every decision is
written to the audit database (`sandshim audit`), and the PostToolUse / AfterTool event that
follows completes it with the command's exit code.

Agents: claude (Claude Code: PreToolUse, PostToolUse, PostToolUseFailure), codex (Codex CLI:
PreToolUse, PostToolUse), cursor (preToolUse, beforeShellExecution, postToolUse,
postToolUseFailure, afterShellExecution), gemini (Gemini CLI: BeforeTool, AfterTool), windsurf
(pre_run_command, post_run_command). Without --agent the payload's shape decides.

Examples:
  echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"python3 x.py"},
         "session_id":"s","tool_use_id":"t","cwd":"/tmp"}' | sandshim hook --agent claude
  sandshim install agent claude      # writes .claude/settings.json for this project)";

}  // namespace

CommandDoc hook_doc() {
  po::options_description options("Options");
  options.add_options()("agent", po::value<std::string>()->value_name("AGENT"),
                        "claude, codex, cursor, gemini or windsurf")(
      "event", po::value<std::string>()->value_name("EVENT"),
      "refuse payloads that name another event")(
      "rewrite-approval", po::value<std::string>()->default_value("auto")->value_name("MODE"),
      "Claude Code only: how a rewritten command is approved. auto: `ask` the user unless the "
      "session runs with bypassPermissions; allow: approve it without a prompt; ask: always ask");
  return shim::make_command_doc("hook", "answer an agent's pre-tool hook (reads JSON on stdin)",
                                k_usage, options);
}

namespace {

// Parses the options; nullopt after printing --help.
std::optional<HookOptions> parse_options(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!shim::parse_subcommand_options(args, hook_doc(), vm)) {
    return std::nullopt;
  }
  HookOptions result;
  if (vm.count("agent") != 0) {
    result.agent = agent_named(vm["agent"].as<std::string>());
    if (!result.agent) {
      throw std::invalid_argument("unknown agent " + quoted(vm["agent"].as<std::string>()) +
                                  " (claude, codex, cursor, gemini, windsurf)");
    }
  }
  result.expected_event = vm.count("event") != 0 ? vm["event"].as<std::string>() : "";
  result.rewrite_approval = vm["rewrite-approval"].as<std::string>();
  if (result.rewrite_approval != "auto" && result.rewrite_approval != "allow" &&
      result.rewrite_approval != "ask") {
    throw std::invalid_argument("--rewrite-approval must be auto, allow or ask");
  }
  return result;
}

// Reads stdin up to one byte past the limit, so an oversized payload is seen as such.
std::string read_payload() {
  std::string payload;
  std::array<char, 65536> buffer{};
  while (payload.size() <= k_max_payload_bytes) {
    ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    payload.append(buffer.data(), static_cast<size_t>(n));
  }
  return payload;
}

int reply(const HookReply& answer) {
  std::cout << answer.out << std::flush;
  std::cerr << answer.err << std::flush;
  return answer.exit_code;
}

}  // namespace

int hook_main(const std::vector<std::string>& args) {
  try {
    std::optional<HookOptions> options = parse_options(args);
    if (!options) {
      return 0;
    }
    return reply(run_hook(*options, read_payload(), system_environment()));
  } catch (const std::exception& e) {
    return reply(
        refuse_any_agent("sandshim: hook: " + std::string(e.what()) + "; the command was not run"));
  }
}

}  // namespace sandshim::hooks
