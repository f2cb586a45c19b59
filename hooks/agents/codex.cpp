// Codex CLI (0.171): Claude Code's PreToolUse/PostToolUse shape (claude_shape.hpp) plus turn_id
// and model. It validates answers strictly (additionalProperties: false, no `ask`, no `allow`
// without `updatedInput`, no `deny` without a reason), so its answers hold nothing else.

#include <string_view>

#include "common/environment.hpp"
#include "common/paths.hpp"
#include "hooks/agents/claude_shape.hpp"
#include "hooks/agents/payload.hpp"
#include "hooks/path_patterns.hpp"

namespace sandshim::hooks {

const AgentDescriptor& codex_agent();

namespace {

using payload::Json;
namespace fs = std::filesystem;

// Codex's apply_patch sends the patch itself as tool_input.command: every file it adds,
// updates, deletes or moves to is named on a `*** … File:` or `*** Move to:` line.
void read_codex_patch(HookEvent& event) {
  if (event.tool_name != "apply_patch") {
    return;
  }
  event.file_tool = true;
  std::string patch = payload::text(event.tool_input, "command");
  static constexpr std::string_view k_markers[] = {
      "*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "};
  size_t start = 0;
  while (start < patch.size()) {
    size_t end = patch.find('\n', start);
    std::string_view line(patch.data() + start,
                          (end == std::string::npos ? patch.size() : end) - start);
    for (std::string_view marker : k_markers) {
      if (line.starts_with(marker)) {
        event.written_paths.emplace_back(line.substr(marker.size()));
      }
    }
    start = end == std::string::npos ? patch.size() : end + 1;
  }
}

HookEvent parse_codex(const Json& body) {
  return claude_shape::parse(body, &codex_agent(), true, read_codex_patch);
}

// Claude Code's events with turn_id and model.
int recognise_codex(const Json& payload) {
  return claude_shape::recognise_tool_event(payload) != 0 && payload.contains("turn_id") &&
                 payload.contains("model")
             ? 2
             : 0;
}

// Codex applies `updatedInput` only with `allow`; its approval policy and sandbox still judge
// the rewritten command (the hook runs before the exec path that asks).
HookReply answer_codex(const HookEvent& event, const Decision& decision) {
  if (decision.verdict == Verdict::deny) {
    return claude_shape::deny(decision.reason);
  }
  if (decision.verdict == Verdict::allow) {
    return claude_shape::nothing();
  }
  Json specific = Json::object();
  specific["hookEventName"] = "PreToolUse";
  specific["permissionDecision"] = "allow";
  specific["updatedInput"] =
      payload::with_command(event.tool_input, "command", decision.rewritten_command);
  return {payload::dump(Json{{"hookSpecificOutput", specific}}), "", 0, "allow+updatedInput"};
}

fs::path config_dir() {
  return environment::absolute("CODEX_HOME").value_or(home_directory() / ".codex");
}

AgentSettings codex_settings(InstallMode /*mode*/) {
  using namespace settings;
  Json pre =
      command_handler(k_timeout_seconds, {{"statusMessage", "sandshim: checking the command"}});
  return {"codex",
          "Codex",
          ".codex/hooks.json",
          config_dir() / "hooks.json",
          Layout::grouped,
          {{"PreToolUse", group("Bash|apply_patch", pre)},
           {"PostToolUse", group("Bash|apply_patch", command_handler(k_timeout_seconds))}},
          Json::object(),
          {"Codex reads a project's .codex/ only when the project is trusted: run `codex` in it "
           "and trust it.",
           "Codex runs a new or changed hook only after you review it, and until then runs "
           "commands without sandshim, silently: start `codex`, open `/hooks` and trust "
           "sandshim's two hooks.",
           "`codex exec` (CI) cannot review hooks: run `sandshim doctor` in the project with "
           "your `codex` on PATH; it asks Codex (`codex app-server`) and prints the lines to add "
           "to ~/.codex/config.toml for the project's trust, then for each hook's hash; once "
           "doctor passes, `codex exec` runs the hooks (no --dangerously-bypass-hook-trust, "
           "which would run any hook of the project unreviewed).",
           "Codex's workspace-write sandbox refuses the engine socket (its seccomp filter), so "
           "sandboxed interpreters fail with exit 125: allow it with `[sandbox_workspace_write] "
           "network_access = true` in ~/.codex/config.toml (or `-c "
           "sandbox_workspace_write.network_access=true`).",
           "Check that the hooks will be called: `sandshim doctor`."}};
}

std::vector<ProtectedPlace> user_places() {
  return {{config_dir(), true, "Codex's settings"},
          {"/etc/codex", true, "Codex's system settings"}};
}

std::vector<ProtectedName> project_places() {
  std::string any(1, k_any_text);
  return {{any + "/.codex/" + any, "Codex's project settings and hooks (.codex/)"}};
}

// The script its routed commands source (rewrite.hpp, route_through_script): sandshim's state,
// which no agent command may write.
fs::path routing_script() {
  return xdg_directory("state") / "sandshim" / "codex-route.sh";
}

}  // namespace

const AgentDescriptor& codex_agent() {
  static const AgentDescriptor agent{
      .flag = "codex",
      .audit_name = "codex",
      .display = "Codex",
      .hook_help = "Codex CLI: PreToolUse, PostToolUse",
      .install_help =
          R"(  codex     .codex/hooks.json      / ~/.codex/hooks.json              PreToolUse (Bash, apply_patch),
                                                                      PostToolUse
)",
      .session_markers = {"CODEX_SANDBOX", "CODEX_THREAD_ID"},
      .recognise = recognise_codex,
      .parse = parse_codex,
      .answer = answer_codex,
      .refuse = claude_shape::refuse,
      .acknowledge = claude_shape::acknowledge,
      .config_dir = config_dir,
      .settings = codex_settings,
      .user_places = user_places,
      .project_places = project_places,
      .workspace_names = {".codex"},
      .routing_script = routing_script,
  };
  return agent;
}

}  // namespace sandshim::hooks
