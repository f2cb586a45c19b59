// Gemini CLI (0.61): BeforeTool/AfterTool on run_shell_command. Always exit 0 with one JSON
// object: a non-JSON answer or a stray line would be read as "allow".

#include "common/environment.hpp"
#include "common/paths.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/agents/payload.hpp"
#include "hooks/path_patterns.hpp"
#include "hooks/rewrite.hpp"

namespace sandshim::hooks {

const AgentDescriptor& gemini_agent();

namespace {

namespace fs = std::filesystem;

using payload::Json;

Phase phase_of(const std::string& event) {
  if (event == "BeforeTool") {
    return Phase::before;
  }
  return event == "AfterTool" ? Phase::after : Phase::unsupported;
}

// tool_response: {llmContent, returnDisplay, error?}; the shell tool writes "Exit Code: N" only
// when N is not 0, so a command that reports neither that, a signal nor an error exited 0.
void read_outcome(const Json& body, HookEvent& event) {
  Json response = payload::object(body, "tool_response");
  auto content = response.find("llmContent");
  std::string text = content != response.end() && content->is_string()
                         ? content->get<std::string>()
                         : response.dump(-1, ' ', false, Json::error_handler_t::replace);
  auto error = response.find("error");
  bool failed =
      (error != response.end() && !error->is_null()) || text.find("Signal:") != std::string::npos;
  event.exit_code = payload::number_after(text, "Exit Code:");
  if (!event.exit_code && !failed) {
    event.exit_code = 0;
  }
  event.response_tail = payload::tail(text);
}

// The shell tool's dir_path, absolute or under the session's cwd: where the command runs.
std::string command_directory(std::string cwd, const Json& tool_input) {
  std::string directory = payload::text(tool_input, "dir_path");
  if (directory.starts_with('/')) {
    return directory;
  }
  if (!directory.empty() && !cwd.empty()) {
    cwd += "/" + directory;
  }
  return cwd;
}

// Gemini CLI gives no id: one from the session and what the tool does. AfterTool reports the
// command as it ran (rewritten): the id comes from the original.
std::string derived_tool_use_id(const HookEvent& event, const std::string& written) {
  std::string subject = event.file_tool
                            ? "write " + written
                            : std::string(strip_any_routing(event.command).value_or(event.command));
  return payload::derived_id({"gemini", event.session_id, subject});
}

HookEvent parse_gemini(const Json& body) {
  HookEvent event;
  event.agent = &gemini_agent();
  event.event = payload::required_text(body, "hook_event_name");
  event.phase = phase_of(event.event);
  event.tool_name = payload::text(body, "tool_name");
  event.shell_tool = event.tool_name == "run_shell_command";
  event.file_tool = event.tool_name == "write_file" || event.tool_name == "replace";
  event.can_rewrite = true;
  event.tool_input = payload::object(body, "tool_input");
  event.session_id = payload::text(body, "session_id");
  event.cwd = command_directory(payload::text(body, "cwd"), event.tool_input);
  std::string written = event.file_tool ? payload::text(event.tool_input, "file_path") : "";
  if (!written.empty()) {
    event.written_paths.push_back(written);
  }
  if (event.shell_tool && event.phase != Phase::unsupported) {
    event.command = payload::shell_command(event.tool_input, event.phase == Phase::before);
  }
  event.tool_use_id = derived_tool_use_id(event, written);
  if (event.phase == Phase::after) {
    read_outcome(body, event);
  }
  return event;
}

Json denial(const std::string& reason) {
  return Json{{"decision", "deny"}, {"reason", reason}};
}

// A rewrite sends the complete argument object: v0.61 builds the call from it alone.
HookReply answer_gemini(const HookEvent& event, const Decision& decision) {
  switch (decision.verdict) {
    case Verdict::deny:
      return {payload::dump(denial(decision.reason)), "", 0, "deny"};
    case Verdict::rewrite: {
      Json specific{{"tool_input", payload::with_command(event.tool_input, "command",
                                                         decision.rewritten_command)}};
      return {payload::dump(Json{{"decision", "allow"}, {"hookSpecificOutput", specific}}), "", 0,
              "allow+tool_input"};
    }
    case Verdict::allow:
      break;
  }
  return payload::no_opinion();
}

// Gemini reads stdout JSON whatever the exit code, so the refusal is a JSON deny with exit 0.
HookReply refuse_gemini(const std::string& /*event*/, const std::string& reason) {
  return {payload::dump(denial(reason)), "", 0, "deny"};
}

HookReply acknowledge(const HookEvent& /*event*/) {
  return payload::no_opinion();
}

int recognise_gemini(const Json& payload) {
  auto event = payload.is_object() ? payload.value("hook_event_name", Json()) : Json();
  return event == "BeforeTool" || event == "AfterTool" ? 2 : 0;
}

fs::path config_dir() {
  return home_directory() / ".gemini";
}

// The shell tool and the tools that write files.
constexpr const char* k_tools = "^(run_shell_command|write_file|replace)$";

Json handler(const char* name, const char* description) {
  return Json{{"name", name},
              {"type", "command"},
              {"command", ""},
              {"timeout", settings::k_timeout_seconds * 1000},
              {"description", description}};
}

AgentSettings gemini_settings(InstallMode /*mode*/) {
  using settings::group;
  Json before = handler("sandshim", "Routes interpreters into the sandshim sandbox");
  Json after = handler("sandshim-audit", "Records the command's outcome in sandshim's audit");
  AgentSettings result{
      "gemini",
      "Gemini CLI",
      ".gemini/settings.json",
      config_dir() / "settings.json",
      Layout::grouped,
      {{"BeforeTool", group(k_tools, before)}, {"AfterTool", group(k_tools, after)}},
      Json::object(),
      {"Gemini CLI reads a project's .gemini/settings.json only in a trusted folder: run "
       "`gemini` in the project and trust the folder (it is then listed in "
       "~/.gemini/trustedFolders.json); headless runs need it trusted beforehand.",
       "On its next start Gemini CLI warns about the new project hooks: keep "
       "hooksConfig.enabled on.",
       "A rewritten command still goes through Gemini CLI's own confirmation and policy.",
       "Check that the hooks will be called: `sandshim doctor`."}};
  // Gemini CLI's system settings, which override the user's and the workspace's.
  result.managed_file = environment::absolute("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
                            .value_or("/etc/gemini-cli/settings.json");
  return result;
}

std::vector<ProtectedPlace> user_places() {
  return {{config_dir(), true, "Gemini CLI's settings"},
          {"/etc/gemini-cli", true, "Gemini CLI's system settings"}};
}

std::vector<ProtectedName> project_places() {
  std::string any(1, k_any_text);
  return {{any + "/.gemini/" + any, "Gemini CLI's project settings and hooks (.gemini/)"}};
}

}  // namespace

const AgentDescriptor& gemini_agent() {
  static const AgentDescriptor agent{
      .flag = "gemini",
      .audit_name = "gemini-cli",
      .display = "Gemini CLI",
      .hook_help = "Gemini CLI: BeforeTool, AfterTool",
      .install_help =
          R"(  gemini    .gemini/settings.json  / ~/.gemini/settings.json          BeforeTool (shell and file
                                                                      tools), AfterTool
)",
      .session_markers = {"GEMINI_CLI"},
      .recognise = recognise_gemini,
      .parse = parse_gemini,
      .answer = answer_gemini,
      .refuse = refuse_gemini,
      .acknowledge = acknowledge,
      .config_dir = config_dir,
      .settings = gemini_settings,
      .user_places = user_places,
      .project_places = project_places,
      .workspace_names = {".gemini", "GEMINI.md"},
      .shell_shares_hook_path = true,
  };
  return agent;
}

}  // namespace sandshim::hooks
