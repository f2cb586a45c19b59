// Claude Code (2.1.x); its PreToolUse/PostToolUse shape, which Codex CLI shares (codex.cpp), is
// here too (claude_shape.hpp).
//
// Neither is ever told `allow` or `ask` for a command as written: a command sandshim has no
// objection to gets no answer at all (exit 0, empty stdout), so the agent's own approval flow
// decides exactly as it would without sandshim.

#include <string_view>

#include "common/environment.hpp"
#include "common/paths.hpp"
#include "hooks/agents/claude_shape.hpp"
#include "hooks/agents/payload.hpp"
#include "hooks/path_patterns.hpp"

namespace sandshim::hooks {

const AgentDescriptor& claude_agent();

namespace {

using payload::Json;

Phase phase_of(const std::string& event) {
  if (event == "PreToolUse") {
    return Phase::before;
  }
  if (event == "PostToolUse") {
    return Phase::after;
  }
  if (event == "PostToolUseFailure") {
    return Phase::after_failure;
  }
  if (event == "PermissionDenied") {
    return Phase::not_run;
  }
  if (event == "Stop" || event == "SessionEnd") {
    return Phase::turn_end;
  }
  return event == "SessionStart" ? Phase::session_start : Phase::unsupported;
}

// PostToolUse carries the tool's output (Bash: stdout, stderr, interrupted); a non-zero exit
// fires PostToolUseFailure instead, with error "Exit code N\n<output>".
void read_outcome(const Json& body, HookEvent& event) {
  if (event.phase == Phase::after_failure) {
    std::string error = payload::text(body, "error");
    event.exit_code = payload::number_after(error, "Exit code");
    event.response_tail = payload::tail(error);
    return;
  }
  Json response = body.contains("tool_response") ? body["tool_response"] : Json();
  if (response.is_object()) {
    bool interrupted = payload::flag(response, "interrupted");
    event.exit_code = interrupted ? std::nullopt : std::optional<int>(0);
    for (const char* key : {"exit_code", "exitCode"}) {
      if (response.contains(key) && response[key].is_number_integer()) {
        event.exit_code = response[key].get<int>();
      }
    }
    event.response_tail =
        payload::tail(payload::text(response, "stdout") + payload::text(response, "stderr"));
  } else if (response.is_string()) {
    event.response_tail = payload::tail(response.get<std::string>());
  }
}

// Claude Code's file tools name the file they write; NotebookEdit calls it notebook_path.
void read_claude_file_tool(HookEvent& event) {
  static constexpr std::string_view k_file_tools[] = {"Write", "Edit", "MultiEdit", "NotebookEdit"};
  for (std::string_view tool : k_file_tools) {
    if (event.tool_name == tool) {
      event.file_tool = true;
    }
  }
  for (const char* key : {"file_path", "notebook_path"}) {
    std::string path = event.file_tool ? payload::text(event.tool_input, key) : "";
    if (!path.empty()) {
      event.written_paths.push_back(path);
    }
  }
}

}  // namespace

namespace claude_shape {

HookEvent parse(const Json& body, Agent agent, bool can_rewrite,
                void (*read_file_tool)(HookEvent& event)) {
  HookEvent event;
  event.agent = agent;
  event.event = payload::required_text(body, "hook_event_name");
  event.phase = phase_of(event.event);
  event.tool_name = payload::text(body, "tool_name");
  event.shell_tool = event.tool_name == "Bash";
  event.can_rewrite = can_rewrite;
  event.tool_input = payload::object(body, "tool_input");
  event.cwd = payload::text(body, "cwd");
  event.session_id = payload::text(body, "session_id");
  event.tool_use_id = payload::text(body, "tool_use_id");
  event.permission_mode = payload::text(body, "permission_mode");
  if (event.shell_tool && event.phase != Phase::unsupported &&
      event.phase != Phase::session_start) {
    event.command = payload::shell_command(event.tool_input, event.phase == Phase::before);
  }
  read_file_tool(event);
  if (event.phase == Phase::after || event.phase == Phase::after_failure) {
    read_outcome(body, event);
  }
  return event;
}

int recognise_tool_event(const Json& payload) {
  auto event = payload.is_object() ? payload.value("hook_event_name", Json()) : Json();
  return event == "PreToolUse" || event == "PostToolUse" || event == "PostToolUseFailure" ? 1 : 0;
}

HookReply nothing() {
  return {"", "", 0, "nothing"};
}

HookReply deny(const std::string& reason) {
  return {payload::dump(payload::pre_tool_use_answer("deny", reason)), "", 0, "deny"};
}

// Exit 2 blocks in both; the reason goes on stderr (Codex needs it non-empty). stdout repeats
// the refusal as a schema-valid deny for PreToolUse.
HookReply refuse(const std::string& event, const std::string& reason) {
  std::string out = event == "PreToolUse" || event.empty()
                        ? payload::dump(payload::pre_tool_use_answer("deny", reason))
                        : "";
  return {out, reason + "\n", 2, "exit 2"};
}

HookReply acknowledge(const HookEvent& /*event*/) {
  return claude_shape::nothing();
}

}  // namespace claude_shape

namespace {

namespace fs = std::filesystem;
using claude_shape::deny;

// No objection: nothing. A rewrite cannot happen (can_rewrite is false); were one decided, the
// command as written would not be what sandshim approved, so it is refused.
HookReply answer_claude(const HookEvent& /*event*/, const Decision& decision) {
  switch (decision.verdict) {
    case Verdict::deny:
      return deny(decision.reason);
    case Verdict::rewrite:
      return deny(
          "sandshim: this command would need a rewrite, which Claude Code cannot apply "
          "without approving it; run it through the sandbox: `sandshim run -- …`");
    case Verdict::allow:
      break;
  }
  return claude_shape::nothing();
}

// Claude Code applies updatedInput only with allow (no prompt) or ask (a prompt sandshim would
// add); without either it may run the command as written. So Claude Code gets no rewrite: the
// session environment routes interpreters, and without it they are refused with what works.
HookEvent parse_claude(const Json& body) {
  return claude_shape::parse(body, &claude_agent(), false, read_claude_file_tool);
}

fs::path config_dir() {
  return environment::absolute("CLAUDE_CONFIG_DIR").value_or(home_directory() / ".claude");
}

// The tools sandshim checks: the shell, and every tool that writes files.
constexpr const char* k_tools = "Bash|Write|Edit|MultiEdit|NotebookEdit";

// What a Claude Code user does after an install, and what changes for them.
constexpr const char* k_trust_step =
    "Claude Code runs a project's hooks only once its folder is trusted: run `claude` in "
    "the project once and accept the workspace trust dialog (`claude -p` trusts it by "
    "itself). `/hooks` lists sandshim's entries.";
constexpr const char* k_path_step =
    "Nothing is approved or added to your permission rules: Claude Code asks for, or "
    "allows by your own rules, each command as before. New sessions get the shim "
    "directory first on PATH (SessionStart); in a session started before this install, "
    "python, node and sh by name are refused with the `sandshim run -- …` command that "
    "works: start a new session.";
constexpr const char* k_wrap_step =
    "Nothing is approved or added to your permission rules. Every Bash command of a new "
    "session runs whole in the wrap image (CLAUDE_CODE_SHELL_PREFIX, set in the settings' "
    "env), with no network and the workspace as the `wrap mode` line above says. Claude "
    "Code also starts shell-form hooks and stdio MCP servers through that prefix, so those "
    "run in the sandbox too; sandshim's own hooks are in exec form and run on the host.";
constexpr const char* k_sandbox_step =
    "Claude Code's own sandbox (\"sandbox\": {\"enabled\": true}) refuses every unix "
    "socket on Linux. With the broker, an install while it is on adds "
    "sandbox.network.allowAllUnixSockets, so its commands reach the broker's socket, and "
    "every other unix socket they may open: Linux allows none by path. In direct mode it "
    "adds nothing (that would open the engine's socket): sandboxed interpreters exit 125. "
    "Turned on later: install again.";

// onFailure "block" (Claude Code 2.1.332 has it on command hooks) also turns a timeout of the
// PreToolUse check into a block; a version that does not know the key drops it, and the shell
// fallback still blocks. The other events decide nothing, so they need neither. Wrap mode
// writes them in exec form, which Claude Code runs on the host, never through its prefix.
std::vector<HookEntry> entries(bool wrap) {
  using namespace settings;
  Json pre = command_handler(k_timeout_seconds, {{"onFailure", "block"}});
  pre["statusMessage"] = "sandshim: checking the command";
  Json other = command_handler(k_timeout_seconds);
  if (wrap) {
    pre = exec_form(pre);
    other = exec_form(other);
  }
  return {
      {"SessionStart", group("", other)},          {"PreToolUse", group(k_tools, pre)},
      {"PostToolUse", group(k_tools, other)},      {"PostToolUseFailure", group(k_tools, other)},
      {"PermissionDenied", group(k_tools, other)}, {"SessionEnd", group("", other)}};
}

AgentSettings claude_settings(InstallMode mode) {
  bool wrap = mode == InstallMode::wrap;
  AgentSettings settings{"claude",
                         "Claude Code",
                         ".claude/settings.json",
                         config_dir() / "settings.json",
                         Layout::grouped,
                         entries(wrap),
                         Json::object(),
                         {k_trust_step, wrap ? k_wrap_step : k_path_step, k_sandbox_step,
                          "Check that the hooks will be called: `sandshim doctor`."}};
  settings.sandbox_shell = wrap;
  settings.managed_file = "/etc/claude-code/managed-settings.json";  // Linux (the binary's)
  settings.managed_only_key = "allowManagedHooksOnly";
  return settings;
}

std::vector<ProtectedPlace> user_places() {
  fs::path dir = config_dir();
  return {{dir / "settings.json", false, "Claude Code's settings"},
          {dir / "settings.local.json", false, "Claude Code's settings"},
          {dir / "session-env", true, "Claude Code's session environment"},
          {"/etc/claude-code", true, "Claude Code's managed settings"}};
}

std::vector<ProtectedName> project_places() {
  std::string any(1, k_any_text);
  std::string what = "Claude Code's settings and hooks (.claude/settings*.json)";
  return {{any + "/.claude/hooks", what},
          {any + "/.claude/hooks/" + any, what},
          {any + "/.claude/settings" + std::string(1, k_any_name) + ".json", what}};
}

// Its row in `sandshim install agent --help`.
constexpr const char* k_install_help =
    R"(  claude    .claude/settings.json  / ~/.claude/settings.json          SessionStart (the shims first
                                                                      on PATH), PreToolUse (Bash and
                                                                      file tools), PostToolUse,
                                                                      PostToolUseFailure,
                                                                      PermissionDenied, SessionEnd
                                                                      (closes calls Claude Code
                                                                      refused itself)
)";

}  // namespace

const AgentDescriptor& claude_agent() {
  static const AgentDescriptor agent{
      .flag = "claude",
      .audit_name = "claude-code",
      .display = "Claude Code",
      .hook_help =
          "Claude Code: SessionStart, PreToolUse, PostToolUse, PostToolUseFailure, "
          "PermissionDenied, SessionEnd",
      .install_help = k_install_help,
      .session_markers = {"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"},
      .recognise = claude_shape::recognise_tool_event,
      .parse = parse_claude,
      .answer = answer_claude,
      .refuse = claude_shape::refuse,
      .acknowledge = claude_shape::acknowledge,
      .config_dir = config_dir,
      .settings = claude_settings,
      .user_places = user_places,
      .project_places = project_places,
      .workspace_names = {".claude", "CLAUDE.md"},
      .session_shell = true,
  };
  return agent;
}

}  // namespace sandshim::hooks
