// Claude Code (2.1.x) and Codex CLI (0.171): the same PreToolUse/PostToolUse shape; Codex adds
// turn_id and model and validates answers strictly (additionalProperties: false, no `ask`, no
// `allow` without `updatedInput`, no `deny` without a reason), so its answers hold nothing else.
//
// Neither is ever told `allow` or `ask` for a command as written: a command sandshim has no
// objection to gets no answer at all (exit 0, empty stdout), so the agent's own approval flow
// decides exactly as it would without sandshim.

#include <string_view>

#include "hooks/agents/adapters.hpp"
#include "hooks/agents/payload.hpp"

namespace sandshim::hooks {

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

HookEvent parse_claude_shape(const Json& body, Agent agent) {
  HookEvent event;
  event.agent = agent;
  event.event = payload::required_text(body, "hook_event_name");
  event.phase = phase_of(event.event);
  event.tool_name = payload::text(body, "tool_name");
  event.shell_tool = event.tool_name == "Bash";
  // Claude Code applies updatedInput only with allow (no prompt) or ask (a prompt sandshim would
  // add); without either it may run the command as written. So Claude Code gets no rewrite: the
  // session environment routes interpreters, and without it they are refused with what works.
  event.can_rewrite = agent == Agent::codex;
  event.tool_input = payload::object(body, "tool_input");
  event.cwd = payload::text(body, "cwd");
  event.session_id = payload::text(body, "session_id");
  event.tool_use_id = payload::text(body, "tool_use_id");
  event.permission_mode = payload::text(body, "permission_mode");
  if (event.shell_tool && event.phase != Phase::unsupported &&
      event.phase != Phase::session_start) {
    event.command = payload::shell_command(event.tool_input, event.phase == Phase::before);
  }
  if (agent == Agent::claude) {
    read_claude_file_tool(event);
  } else {
    read_codex_patch(event);
  }
  if (event.phase == Phase::after || event.phase == Phase::after_failure) {
    read_outcome(body, event);
  }
  return event;
}

HookEvent parse_claude(const Json& body) {
  return parse_claude_shape(body, Agent::claude);
}
HookEvent parse_codex(const Json& body) {
  return parse_claude_shape(body, Agent::codex);
}

HookReply nothing() {
  return {"", "", 0, "nothing"};
}

HookReply deny(const std::string& reason) {
  return {payload::dump(payload::pre_tool_use_answer("deny", reason)), "", 0, "deny"};
}

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
  return nothing();
}

// Codex applies `updatedInput` only with `allow`; its approval policy and sandbox still judge
// the rewritten command (the hook runs before the exec path that asks).
HookReply answer_codex(const HookEvent& event, const Decision& decision) {
  if (decision.verdict == Verdict::deny) {
    return deny(decision.reason);
  }
  if (decision.verdict == Verdict::allow) {
    return nothing();
  }
  Json specific = Json::object();
  specific["hookEventName"] = "PreToolUse";
  specific["permissionDecision"] = "allow";
  specific["updatedInput"] =
      payload::with_command(event.tool_input, "command", decision.rewritten_command);
  return {payload::dump(Json{{"hookSpecificOutput", specific}}), "", 0, "allow+updatedInput"};
}

// Exit 2 blocks in both; the reason goes on stderr (Codex needs it non-empty). stdout repeats
// the refusal as a schema-valid deny for PreToolUse.
HookReply refuse_claude(const std::string& event, const std::string& reason) {
  std::string out = event == "PreToolUse" || event.empty()
                        ? payload::dump(payload::pre_tool_use_answer("deny", reason))
                        : "";
  return {out, reason + "\n", 2, "exit 2"};
}

HookReply acknowledge(const HookEvent& /*event*/) {
  return nothing();
}

}  // namespace

const AgentAdapter& claude_adapter() {
  static const AgentAdapter adapter{Agent::claude, "claude",      "claude-code", parse_claude,
                                    answer_claude, refuse_claude, acknowledge};
  return adapter;
}

const AgentAdapter& codex_adapter() {
  static const AgentAdapter adapter{Agent::codex, "codex",       "codex",    parse_codex,
                                    answer_codex, refuse_claude, acknowledge};
  return adapter;
}

}  // namespace sandshim::hooks
