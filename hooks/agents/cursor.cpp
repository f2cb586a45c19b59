// Cursor: preToolUse (matcher Shell) can rewrite through `updated_input`; beforeShellExecution
// can only allow, deny or ask. Answers are flat: {permission, user_message, agent_message}.

#include <array>

#include "common/paths.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/agents/payload.hpp"
#include "hooks/path_patterns.hpp"

namespace sandshim::hooks {

const AgentDescriptor& cursor_agent();

namespace {

namespace fs = std::filesystem;

using payload::Json;

struct CursorEvent {
  std::string_view name;
  Phase phase;
  bool shell_execution;  // beforeShellExecution / afterShellExecution: the command is top-level
};

constexpr std::array<CursorEvent, 5> k_events = {{
    {"preToolUse", Phase::before, false},
    {"beforeShellExecution", Phase::before, true},
    {"postToolUse", Phase::after, false},
    {"afterShellExecution", Phase::after, true},
    {"postToolUseFailure", Phase::after_failure, false},
}};

const CursorEvent* find_event(const std::string& name) {
  for (const CursorEvent& event : k_events) {
    if (event.name == name) {
      return &event;
    }
  }
  return nullptr;
}

std::string first_workspace_root(const Json& body) {
  auto roots = body.find("workspace_roots");
  if (roots != body.end() && roots->is_array() && !roots->empty() && roots->front().is_string()) {
    return roots->front().get<std::string>();
  }
  return "";
}

// postToolUse reports the tool's result as a JSON string: {"exitCode":0,"stdout":…}.
void read_tool_output(const Json& body, HookEvent& event) {
  std::string output = payload::text(body, "tool_output");
  event.response_tail = payload::tail(output);
  Json result = Json::parse(output, nullptr, false);
  if (result.is_object() && result.contains("exitCode") && result["exitCode"].is_number_integer()) {
    event.exit_code = result["exitCode"].get<int>();
  }
}

void read_outcome(const Json& body, HookEvent& event, bool shell_execution) {
  if (event.phase == Phase::after_failure) {
    event.response_tail = payload::tail(payload::text(body, "error_message"));
  } else if (shell_execution) {
    event.response_tail = payload::tail(payload::text(body, "output"));
  } else {
    read_tool_output(body, event);
  }
}

void read_command(const Json& body, HookEvent& event, bool shell_execution) {
  if (shell_execution) {
    event.tool_name = "Shell";
    event.command = payload::text(body, "command");
    return;
  }
  event.tool_name = payload::text(body, "tool_name");
  event.tool_input = payload::object(body, "tool_input");
  event.command = payload::text(event.tool_input, "command");
  std::string directory = payload::text(event.tool_input, "working_directory");
  event.cwd = directory.empty() ? event.cwd : directory;
}

HookEvent parse_cursor(const Json& body) {
  HookEvent event;
  event.agent = &cursor_agent();
  event.event = payload::required_text(body, "hook_event_name");
  const CursorEvent* known = find_event(event.event);
  event.phase = known == nullptr ? Phase::unsupported : known->phase;
  bool shell_execution = known != nullptr && known->shell_execution;
  event.cwd = payload::text(body, "cwd");
  event.cwd = event.cwd.empty() ? first_workspace_root(body) : event.cwd;
  read_command(body, event, shell_execution);
  event.shell_tool = event.tool_name == "Shell";
  event.can_rewrite = event.event == "preToolUse";
  event.session_id = payload::text(body, "conversation_id");
  event.tool_use_id = payload::text(body, "tool_use_id");
  if (event.tool_use_id.empty()) {
    event.tool_use_id = payload::derived_id(
        {"cursor", event.session_id, payload::text(body, "generation_id"), event.command});
  }
  if (event.shell_tool && event.phase == Phase::before && event.command.empty()) {
    throw PayloadError("field \"command\" is missing");
  }
  if (known != nullptr && known->phase != Phase::before) {
    read_outcome(body, event, shell_execution);
  }
  return event;
}

Json denial(const std::string& reason) {
  return Json{{"permission", "deny"},
              {"user_message", "sandshim blocked this command (see the agent's explanation)"},
              {"agent_message", reason}};
}

HookReply answer_cursor(const HookEvent& event, const Decision& decision) {
  if (decision.verdict == Verdict::deny) {
    return {payload::dump(denial(decision.reason)), "", 0, "deny"};
  }
  Json answer{{"permission", "allow"}};
  bool rewrite = decision.verdict == Verdict::rewrite && event.can_rewrite;
  if (rewrite) {
    answer["updated_input"] =
        payload::with_command(event.tool_input, "command", decision.rewritten_command);
  }
  return {payload::dump(answer), "", 0, rewrite ? "allow+updated_input" : "allow"};
}

// Exit 2 is Cursor's block; the flat deny says the same to versions that read stdout.
HookReply refuse_cursor(const std::string& /*event*/, const std::string& reason) {
  return {payload::dump(denial(reason)), reason + "\n", 2, "exit 2"};
}

HookReply acknowledge(const HookEvent& /*event*/) {
  return payload::no_opinion();
}

// Cursor's own fields; cursor_version names it even when it runs Claude Code's hooks.
int recognise_cursor(const Json& payload) {
  if (payload.is_object() && payload.contains("cursor_version")) {
    return k_unmistakable;
  }
  return payload.is_object() && payload.contains("conversation_id") ? 3 : 0;
}

fs::path config_dir() {
  return home_directory() / ".cursor";
}

AgentSettings cursor_settings(InstallMode /*mode*/) {
  using settings::k_timeout_seconds;
  Json pre{
      {"command", ""}, {"matcher", "Shell"}, {"timeout", k_timeout_seconds}, {"failClosed", true}};
  Json post{{"command", ""}, {"matcher", "Shell"}, {"timeout", k_timeout_seconds}};
  return {"cursor",
          "Cursor",
          ".cursor/hooks.json",
          config_dir() / "hooks.json",
          Layout::flat,
          {{"preToolUse", pre}, {"postToolUse", post}, {"postToolUseFailure", post}},
          Json{{"version", 1}},
          {"Cursor runs project hooks in trusted workspaces only: open the project in Cursor and "
           "trust it; hooks.json is reloaded by itself.",
           "failClosed is set: a check that crashes or times out blocks the command."}};
}

std::vector<ProtectedPlace> user_places() {
  return {{config_dir() / "hooks.json", false, "Cursor's hooks"}};
}

std::vector<ProtectedName> project_places() {
  return {{std::string(1, k_any_text) + "/.cursor/hooks.json",
           "an agent's hooks (.cursor/hooks.json)"}};
}

}  // namespace

const AgentDescriptor& cursor_agent() {
  static const AgentDescriptor agent{
      .flag = "cursor",
      .audit_name = "cursor",
      .display = "Cursor",
      .hook_help =
          "Cursor: preToolUse, beforeShellExecution, postToolUse, postToolUseFailure, "
          "afterShellExecution",
      .install_help =
          R"(  cursor    .cursor/hooks.json     / ~/.cursor/hooks.json             preToolUse (failClosed),
                                                                      postToolUse, postToolUseFailure
)",
      .session_markers = {"CURSOR_TRACE_ID", "CURSOR_AGENT"},
      .recognise = recognise_cursor,
      .parse = parse_cursor,
      .answer = answer_cursor,
      .refuse = refuse_cursor,
      .acknowledge = acknowledge,
      .config_dir = config_dir,
      .settings = cursor_settings,
      .user_places = user_places,
      .project_places = project_places,
      .workspace_names = {".cursor"},
  };
  return agent;
}

}  // namespace sandshim::hooks
