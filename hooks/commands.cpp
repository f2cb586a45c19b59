#include "hooks/commands.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <string_view>

#include "common/command_doc.hpp"
#include "common/io.hpp"
#include "common/strings.hpp"
#include "hooks/hook_run.hpp"

namespace sandshim::hooks {

namespace po = boost::program_options;

namespace {

const char* const k_usage =
    R"(sandshim hook [--agent AGENT] [--event EVENT]

An AI coding agent runs this before (and after) each shell command it issues. It reads the
agent's hook event as JSON on stdin and answers on stdout in that agent's own format: exactly
one JSON object, nothing else (nothing at all for an agent that reads only the exit code).
`sandshim install agent NAME` writes the agent's configuration for you.

It never approves anything: a command it has no objection to gets no answer (exit 0, nothing
on stdout), so the agent's own approval flow decides exactly as without sandshim; the rest is
refused with a reason for the model. What it decides depends on the policy's hook.mode:
  path  (default) python, node and sh reached by name run in the sandbox, everything else
        (git, make, ls) as before. Claude Code gets the shim directory first on PATH once per
        session (SessionStart writes it to $CLAUDE_ENV_FILE); other agents get the command
        rewritten with a PATH prefix, which they approve as they would the original.
        Refused, with what to run instead: interpreters called by path (/usr/bin/python3,
        ./venv/bin/python), PATH replaced, env -i, command -p, exec -a, sudo, eval, scripts
        whose #! line names an interpreter by path, SANDSHIM_*/DOCKER_*/LD_PRELOAD settings.
  wrap  run the whole command, as given, in `sandshim run --image WRAP_IMAGE -- bash -c '…'`.
  deny  refuse interpreters that do not go through sandshim; nothing is rewritten.
File tools (Claude Code's Write, Edit, MultiEdit, NotebookEdit; Codex's apply_patch; Gemini's
write_file, replace) are refused when they write what the sandbox depends on: sandshim's config
and state, the audit database, the shim directory, the agents' settings and hook files,
.sandshim.conf, .git/hooks, .git/config and git's core.hooksPath.
A command sandshim cannot parse, an oversized payload (over 1 MiB), an unknown event, any
internal error and a check that takes longer than 20 seconds are refused in the way the agent
honours (exit 2 with the reason on stderr, which every agent but Gemini CLI reads as a block;
Gemini: a JSON deny). Every decision is written to the audit database (`sandshim
audit`), and the PostToolUse / AfterTool event that follows completes it with the command's
exit code (Claude Code's PermissionDenied closes it as not run, and its SessionEnd closes the
session's decisions still open: the calls its own permission rules refused).

%AGENTS%

Examples:
  echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"python3 x.py"},
         "session_id":"s","tool_use_id":"t","cwd":"/tmp"}' | sandshim hook --agent claude
  sandshim install agent claude      # writes .claude/settings.json for this project)";

// The usage with one line per agent of the registry.
std::string usage() {
  std::string agents = "Agents (without --agent the payload's shape decides):\n";
  for (Agent agent : all_agents()) {
    std::string flag(agent->flag);
    agents += "  " + flag + std::string(flag.size() < 10 ? 10 - flag.size() : 1, ' ') +
              std::string(agent->hook_help) + "\n";
  }
  std::string text = k_usage;
  return text.replace(text.find("%AGENTS%\n"), 9, agents);
}

}  // namespace

CommandDoc hook_doc() {
  po::options_description options("Options");
  options.add_options()("agent", po::value<std::string>()->value_name("AGENT"),
                        agent_flags(" or ").c_str())("event",
                                                     po::value<std::string>()->value_name("EVENT"),
                                                     "refuse payloads that name another event");
  return make_command_doc("hook", "answer an agent's pre-tool hook (reads JSON on stdin)", usage(),
                          options);
}

namespace {

// Parses the options; nullopt after printing --help.
std::optional<HookOptions> parse_options(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, hook_doc(), vm)) {
    return std::nullopt;
  }
  HookOptions result;
  if (vm.count("agent") != 0) {
    result.agent = agent_named(vm["agent"].as<std::string>());
    if (!result.agent) {
      throw std::invalid_argument("unknown agent " + quoted(vm["agent"].as<std::string>()) + " (" +
                                  agent_flags() + ")");
    }
  }
  result.expected_event = vm.count("event") != 0 ? vm["event"].as<std::string>() : "";
  return result;
}

// Reads stdin up to one byte past the limit, so an oversized payload is seen as such.
std::string read_payload() {
  return read_to_end(STDIN_FILENO, k_max_payload_bytes).value_or("");
}

// Refuses the tool call itself (exit 2, which every agent honours as a block) when the answer
// is not ready in time: a slow engine or a locked audit database never reaches the agent's own
// timeout, which Claude Code, Codex and Gemini CLI treat as no objection. An alarm, not a
// thread: a hook's whole call is a few milliseconds, and a thread's start and join (a wake-up
// the scheduler may delay on a busy machine) were part of them.
class Deadline {
 public:
  explicit Deadline(std::chrono::seconds limit) {
    struct sigaction action {};
    action.sa_handler = refuse_late;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGALRM, &action, nullptr);
    ::alarm(static_cast<unsigned>(limit.count()));
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
  ~Deadline() { finish(); }

  // The answer is about to be written: the deadline no longer applies.
  void finish() { ::alarm(0); }

 private:
  // Async-signal-safe: one write, then _exit.
  static void refuse_late(int /*signal*/) {
    static_assert(k_hook_deadline_seconds == 20, "the message below names the deadline");
    static constexpr std::string_view k_reason =
        "sandshim: the check took longer than 20 seconds, so the command was not run; run it "
        "again, or ask the user to look at `sandshim doctor`\n";
    ssize_t written = ::write(STDERR_FILENO, k_reason.data(), k_reason.size());
    static_cast<void>(written);
    ::_exit(2);
  }
};

int reply(const HookReply& answer, Deadline& deadline) {
  deadline.finish();
  std::cout << answer.out << std::flush;
  std::cerr << answer.err << std::flush;
  return answer.exit_code;
}

}  // namespace

int hook_main(const std::vector<std::string>& args,
              const std::function<void(HookEnvironment&)>& adapt) {
  try {
    std::optional<HookOptions> options = parse_options(args);
    if (!options) {
      return 0;
    }
    Deadline deadline{std::chrono::seconds(k_hook_deadline_seconds)};
    HookEnvironment environment = system_environment();
    if (adapt) {
      adapt(environment);
    }
    return reply(run_hook(*options, read_payload(), environment), deadline);
  } catch (const std::exception& e) {
    HookReply refusal =
        refuse_any_agent("sandshim: hook: " + std::string(e.what()) + "; the command was not run");
    std::cerr << refusal.err << std::flush;
    return refusal.exit_code;
  }
}

}  // namespace sandshim::hooks
