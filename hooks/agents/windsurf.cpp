// Windsurf Cascade: pre_run_command/post_run_command with tool_info {command_line, cwd}. It
// reads the exit code only (2 blocks, with stderr shown when show_output is on) and cannot
// rewrite, so stdout stays empty.

#include "hooks/agents/adapters.hpp"
#include "hooks/agents/payload.hpp"

namespace sandshim::hooks {

namespace {

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
  event.agent = Agent::windsurf;
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

}  // namespace

const AgentAdapter& windsurf_adapter() {
  static const AgentAdapter adapter{Agent::windsurf, "windsurf",      "windsurf", parse_windsurf,
                                    answer_windsurf, refuse_windsurf, acknowledge};
  return adapter;
}

}  // namespace sandshim::hooks
