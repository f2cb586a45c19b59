// Windsurf Cascade: pre_run_command/post_run_command with tool_info {command_line, cwd}. It
// reads the exit code only (2 blocks, with stderr shown when show_output is on) and cannot
// rewrite, so stdout stays empty.

#include "common/paths.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/agents/payload.hpp"
#include "hooks/path_patterns.hpp"

namespace sandshim::hooks {

const AgentDescriptor& windsurf_agent();

namespace {

namespace fs = std::filesystem;

using payload::Json;

Phase phase_of(const std::string& event) {
  if (event == "pre_run_command") {
    return Phase::before;
  }
  return event == "post_run_command" ? Phase::after : Phase::unsupported;
}

void read_outcome(const Json& info, HookEvent& event) {
  auto code = info.find("exit_code");
  if (code != info.end() && code->is_number_integer()) {
    event.exit_code = code->get<int>();
  }
  event.response_tail = payload::tail(payload::text(info, "output"));
}

HookEvent parse_windsurf(const Json& body) {
  HookEvent event;
  event.agent = &windsurf_agent();
  event.event = payload::required_text(body, "agent_action_name");
  event.phase = phase_of(event.event);
  event.shell_tool = event.phase != Phase::unsupported;
  event.tool_name = event.shell_tool ? "run_command" : event.event;
  event.can_rewrite = false;
  Json info = payload::object(body, "tool_info");
  event.command = event.phase == Phase::before ? payload::required_text(info, "command_line")
                                               : payload::text(info, "command_line");
  event.cwd = payload::text(info, "cwd");
  event.session_id = payload::text(body, "trajectory_id");
  event.tool_use_id = payload::derived_id({"windsurf", event.session_id, event.command});
  if (event.phase == Phase::after) {
    read_outcome(info, event);
  }
  return event;
}

HookReply refuse_windsurf(const std::string& /*event*/, const std::string& reason) {
  return {"", reason + "\n", 2, "exit 2"};
}

HookReply answer_windsurf(const HookEvent& event, const Decision& decision) {
  if (decision.verdict == Verdict::deny) {
    return refuse_windsurf(event.event, decision.reason);
  }
  return {"", "", 0, "nothing"};
}

HookReply acknowledge(const HookEvent& /*event*/) {
  return {"", "", 0, "nothing"};
}

int recognise_windsurf(const Json& payload) {
  return payload.is_object() && payload.contains("agent_action_name") ? 4 : 0;
}

fs::path config_dir() {
  return home_directory() / ".codeium" / "windsurf";
}

AgentSettings windsurf_settings(InstallMode /*mode*/) {
  return {"windsurf",
          "Windsurf",
          ".windsurf/hooks.json",
          config_dir() / "hooks.json",
          Layout::flat,
          {{"pre_run_command", Json{{"command", ""}, {"show_output", true}}},
           {"post_run_command", Json{{"command", ""}, {"show_output", false}}}},
          Json::object(),
          {"Windsurf cannot rewrite commands: interpreter calls are refused with the command to "
           "run instead (`sandshim run -- …`), unless the shim directory is first on Windsurf's "
           "PATH (start it from a shell after `eval \"$(sandshim env)\"`)."}};
}

std::vector<ProtectedPlace> user_places() {
  return {{config_dir() / "hooks.json", false, "Windsurf's hooks"}};
}

std::vector<ProtectedName> project_places() {
  return {{std::string(1, k_any_text) + "/.windsurf/hooks.json",
           "an agent's hooks (.windsurf/hooks.json)"}};
}

}  // namespace

const AgentDescriptor& windsurf_agent() {
  static const AgentDescriptor agent{
      .flag = "windsurf",
      .audit_name = "windsurf",
      .display = "Windsurf",
      .hook_help = "Windsurf: pre_run_command, post_run_command",
      .install_help =
          R"(  windsurf  .windsurf/hooks.json   / ~/.codeium/windsurf/hooks.json   pre_run_command, post_run_command
)",
      .session_markers = {"WINDSURF_SESSION_ID"},
      .recognise = recognise_windsurf,
      .parse = parse_windsurf,
      .answer = answer_windsurf,
      .refuse = refuse_windsurf,
      .acknowledge = acknowledge,
      .config_dir = config_dir,
      .settings = windsurf_settings,
      .user_places = user_places,
      .project_places = project_places,
      .workspace_names = {".windsurf"},
  };
  return agent;
}

}  // namespace sandshim::hooks
