// Windsurf's tests, all of them: its hook protocol (payloads as Windsurf Cascade sends them), its
// refusals, and the settings `sandshim install agent windsurf` writes.

#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>

#include "install/agent_install.hpp"
#include "install/agent_settings.hpp"
#include "install/json_text.hpp"
#include "test_hooks_agents_support.hpp"

using namespace sandshim::testing::agents;
namespace install = sandshim::install;

namespace {

const std::string k_pre_run_command = R"({
  "agent_action_name": "pre_run_command",
  "trajectory_id": "traj-7f3e",
  "execution_id": "exec-0001",
  "timestamp": "2026-11-30T07:00:00Z",
  "model_name": "SWE-1.5",
  "tool_info": {"command_line": "python3 -m http.server 8000", "cwd": "/home/user/my-project"}
})";
const std::string k_pre_run_command_plain =
    R"({"agent_action_name":"pre_run_command","trajectory_id":"traj-7f3e","execution_id":"exec-0002","timestamp":"2026-11-30T07:00:01Z","tool_info":{"command_line":"git diff --stat","cwd":"/home/user/my-project"}})";
const std::string k_post_run_command =
    R"({"agent_action_name":"post_run_command","trajectory_id":"traj-7f3e","execution_id":"exec-0003","timestamp":"2026-11-30T07:00:02Z","tool_info":{"command_line":"git diff --stat","cwd":"/home/user/my-project","exit_code":0,"output":" a.py | 2 +-\n"}})";
const std::string k_pre_read_code =
    R"({"agent_action_name":"pre_read_code","trajectory_id":"traj-7f3e","execution_id":"exec-0004","timestamp":"2026-11-30T07:00:03Z","tool_info":{"file_path":"/home/user/my-project/a.py"}})";
const std::string k_no_tool_info =
    R"({"agent_action_name":"pre_run_command","trajectory_id":"traj-7f3e","execution_id":"exec-9"})";

const std::string k_binary = "/usr/local/bin/sandshim";

// What `sandshim install agent windsurf` writes into a new .windsurf/hooks.json.
const std::string k_installed = R"({
  "hooks": {
    "pre_run_command": [
      {
        "command": "/usr/local/bin/sandshim hook --agent windsurf || { s=$?; [ \"$s\" -eq 2 ] && exit 2; echo \"sandshim: the hook failed (exit $s), so the command was not run; run: sandshim doctor\" >&2; exit 2; }",
        "show_output": true
      }
    ],
    "post_run_command": [
      {
        "command": "/usr/local/bin/sandshim hook --agent windsurf || { s=$?; [ \"$s\" -eq 2 ] && exit 2; echo \"sandshim: the hook failed (exit $s), so the command was not run; run: sandshim doctor\" >&2; exit 2; }",
        "show_output": false
      }
    ]
  }
}
)";

// A user's own hooks file, before sandshim's are added.
const std::string k_users_hooks = R"({
  "hooks": {
    "pre_run_command": [
      {
        "command": "python3 /opt/guard/check.py",
        "show_output": true
      }
    ]
  }
}
)";

install::AgentSettings windsurf_settings() {
  std::optional<install::AgentSettings> settings = install::agent_settings_named("windsurf");
  REQUIRE(settings);
  return *settings;
}

}  // namespace

TEST_CASE("Windsurf: exit code only; 2 blocks with the reason on stderr",
          "[hooks][agents][windsurf]") {
  FakeWorld world;
  HookReply blocked = world.run(k_pre_run_command, agent("windsurf"));
  CHECK(blocked.exit_code == 2);
  CHECK(blocked.out.empty());
  CHECK(blocked.err.find("sandshim run -- python3") != std::string::npos);
  HookReply allowed = world.run(k_pre_run_command_plain, agent("windsurf"));
  CHECK(allowed.exit_code == 0);
  CHECK(allowed.out.empty());
  world.run(k_post_run_command, agent("windsurf"));
  REQUIRE(world.completions.size() == 1);
  CHECK(world.completions[0].first == world.records.at(1).tool_use_id);
  CHECK(world.completions[0].second.exit_code == 0);
  CHECK(world.run(k_pre_read_code, agent("windsurf")).exit_code == 2);
}

TEST_CASE("Windsurf: without --agent its payload names it", "[hooks][agents][windsurf]") {
  FakeWorld world;
  world.run(k_pre_run_command);
  REQUIRE(world.records.size() == 1);
  CHECK(world.records[0].agent == "windsurf");
}

TEST_CASE("Windsurf: a malformed payload is exit 2 with the reason on stderr, stdout empty",
          "[hooks][agents][windsurf]") {
  for (const std::string& payload : {std::string("{"), std::string("[]"), k_no_tool_info}) {
    FakeWorld world;
    HookReply reply = world.run(payload, agent("windsurf"));
    INFO(payload);
    CHECK(reply.exit_code == 2);
    CHECK(reply.out.empty());
    CHECK_FALSE(reply.err.empty());
    REQUIRE(world.records.size() == 1);
    CHECK(world.records[0].decision == sandshim::audit::Decision::deny);
  }
  for (Agent which : all_agents()) {  // no agent's adapter takes it for a command to run
    FakeWorld world;
    HookReply reply = world.run(k_no_tool_info, agent(which->flag));
    INFO(which->flag);
    CHECK((reply.exit_code == 2 || reply.out.find("deny") != std::string::npos));
  }
}

TEST_CASE("Windsurf: install writes its golden settings and uninstall restores the user's file",
          "[install][settings][windsurf]") {
  install::AgentSettings settings = windsurf_settings();
  std::string command = install::hook_command_for(k_binary, "windsurf");
  CHECK(install::merge_hooks(std::nullopt, settings, command).text == k_installed);
  install::Merged installed = install::merge_hooks(k_users_hooks, settings, command);
  CHECK(installed.change == install::Change::updated);
  CHECK(install::has_sandshim_hooks(installed.text, settings));
  CHECK(install::merge_hooks(installed.text, settings, command).change ==
        install::Change::unchanged);
  install::Merged removed = install::unmerge_hooks(installed.text, settings);
  CHECK(removed.change == install::Change::removed);
  CHECK(removed.text == k_users_hooks);
}

TEST_CASE("Windsurf: install --dry-run names .windsurf/hooks.json and writes nothing",
          "[install][agent][windsurf]") {
  sandshim::testing::TempDir dir;
  std::filesystem::path project = dir / "project";
  std::filesystem::create_directories(project);
  sandshim::testing::EnvOverride env{{"HOME", (dir / "home").string()},
                                     {"XDG_CONFIG_HOME", (dir / "config").string()},
                                     {"XDG_STATE_HOME", (dir / "state").string()}};
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  install::install_agent_main({"windsurf", "--project", project.string(), "--dry-run"});
  std::cout.rdbuf(old);
  CHECK(captured.str().find("created   .windsurf/hooks.json") != std::string::npos);
  CHECK(std::filesystem::is_empty(project));
}
