#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <set>

#include "audit/store.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "hooks/hook_run.hpp"
#include "hooks/rewrite.hpp"
#include "policy/known_agents.hpp"
#include "test_hooks_agents_support.hpp"
#include "test_hooks_json_schema.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;
using sandshim::testing::data_dir;
using sandshim::testing::read_text;
using namespace sandshim::testing::agents;
using sandshim::testing::schema_errors;
using Json = nlohmann::json;

namespace {

Json schema(const std::string& name) {
  return Json::parse(fixture("schemas/codex-0.171-" + name + ".json"));
}

void require_codex_valid(const HookReply& reply, const std::string& event) {
  std::string name = event == "PreToolUse" ? "pre-tool-use" : "post-tool-use";
  if (reply.out.empty()) {
    return;  // empty stdout is Codex's "no decision"
  }
  std::vector<std::string> errors =
      schema_errors(out_json(reply), schema(name + ".command.output"));
  INFO(reply.out);
  CHECK(errors == std::vector<std::string>{});
}

const std::set<std::string> k_claude_specific_keys = {"hookEventName", "permissionDecision",
                                                      "permissionDecisionReason", "updatedInput",
                                                      "additionalContext"};

}  // namespace

TEST_CASE("Claude Code: with the session environment in place, no command gets an answer",
          "[hooks][agents][claude]") {
  FakeWorld world;
  world.session_scripts = {session_environment_script(k_shim_dir, "claude-code", "abc123")};
  for (const char* command : {"ls -la", "git status", "python3 -m pytest -q", "make test"}) {
    Json payload = Json::parse(fixture("claude/pre_tool_use.json"));
    payload["tool_input"]["command"] = command;
    HookReply reply = world.run(payload.dump(), agent("claude"));
    INFO(command);
    CHECK(reply.out.empty());  // no decision: Claude Code's own approval flow decides
    CHECK(reply.err.empty());
    CHECK(reply.exit_code == 0);
  }
  REQUIRE(world.records.size() == 4);
  const auto& record = world.records[2];
  CHECK(record.agent == "claude-code");
  CHECK(record.event == "PreToolUse");
  CHECK(record.session_id == "abc123");
  CHECK(record.tool_use_id == "toolu_01ABC123");
  CHECK(record.original_command == "python3 -m pytest -q");
  CHECK(record.rewritten_command.empty());
  CHECK(record.decision == sandshim::audit::Decision::allow);
  CHECK(record.rule == "shim-on-path");
  CHECK(record.answer == "nothing");
  CHECK(record.permission_mode == "default");
  CHECK(record.payload_bytes > 0);
}

TEST_CASE(
    "Claude Code: a session without it gets no rewrite: interpreters are refused with "
    "what works, the rest gets no answer",
    "[hooks][agents][claude]") {
  FakeWorld world;  // no session env file: the session started before the install
  HookReply reply = world.run(fixture("claude/pre_tool_use.json"), agent("claude"));
  CHECK(reply.exit_code == 0);
  CHECK(reply.err.empty());
  Json answer = out_json(reply);
  Json specific = answer["hookSpecificOutput"];
  CHECK(answer.size() == 1);
  for (const auto& [key, value] : specific.items()) {
    CHECK(k_claude_specific_keys.contains(key));
  }
  CHECK(specific["permissionDecision"] == "deny");
  CHECK_FALSE(specific.contains("updatedInput"));
  std::string reason = specific["permissionDecisionReason"];
  CHECK(reason.find("/usr/local/bin/sandshim run -- python3") != std::string::npos);
  REQUIRE(world.records.size() == 1);
  CHECK(world.records[0].decision == sandshim::audit::Decision::deny);
  CHECK(world.records[0].rule == "cannot-rewrite");
  CHECK(world.records[0].answer == "deny");

  Json ls = Json::parse(fixture("claude/pre_tool_use.json"));
  ls["tool_input"]["command"] = "ls -la && git status";
  CHECK(world.run(ls.dump(), agent("claude")).out.empty());

  world.policy.hook_mode =
      sandshim::shim::HookMode::wrap;  // wrap needs a rewrite: refused with the command that works
  Json wrapped = out_json(world.run(fixture("claude/pre_tool_use.json"), agent("claude")));
  CHECK(wrapped["hookSpecificOutput"]["permissionDecision"] == "deny");
  CHECK(std::string(wrapped["hookSpecificOutput"]["permissionDecisionReason"])
            .find("run -- bash -c") != std::string::npos);
}

TEST_CASE("Claude Code: no permission mode gets allow or ask from sandshim",
          "[hooks][agents][claude]") {
  for (const char* mode :
       {"default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions"}) {
    for (bool session_env : {false, true}) {
      for (const char* hook_mode : {"path", "wrap", "deny"}) {
        FakeWorld world;
        world.policy.hook_mode = *sandshim::shim::hook_mode_from(hook_mode);
        if (session_env) {
          world.session_scripts = {session_environment_script(k_shim_dir, "claude-code", "abc123")};
        }
        for (const char* command : {"ls", "python3 x.py", "/usr/bin/python3 x.py"}) {
          Json payload = Json::parse(fixture("claude/pre_tool_use_optional_fields.json"));
          payload["permission_mode"] = mode;
          payload["session_id"] = "abc123";
          payload["tool_input"]["command"] = command;
          HookReply reply = world.run(payload.dump(), agent("claude"));
          INFO(mode << " " << hook_mode << " " << command << " -> " << reply.out);
          if (reply.out.empty()) {
            continue;
          }
          Json specific = out_json(reply)["hookSpecificOutput"];
          CHECK((!specific.contains("permissionDecision") ||
                 specific["permissionDecision"] == "deny"));
          CHECK_FALSE(specific.contains("updatedInput"));
        }
        CHECK(world.records.back().permission_mode == mode);
      }
    }
  }
}

TEST_CASE("Claude Code: SessionStart puts the shims first on PATH through CLAUDE_ENV_FILE",
          "[hooks][agents][claude]") {
  FakeWorld world;
  world.env_file = "/home/user/.claude/session-env/abc123/sessionstart-hook-0.sh";
  Json payload = {{"session_id", "abc123"},
                  {"transcript_path", "/t.jsonl"},
                  {"cwd", "/home/user/my-project"},
                  {"hook_event_name", "SessionStart"},
                  {"source", "startup"}};
  HookReply reply = world.run(payload.dump(), agent("claude"));
  CHECK(reply.out.empty());
  CHECK(reply.exit_code == 0);
  REQUIRE(world.appended.size() == 1);
  CHECK(world.appended[0].first == world.env_file);
  CHECK(world.appended[0].second ==
        "# sandshim: python, node and sh reached by name run in its sandbox\n"
        "export PATH=" +
            k_shim_dir +
            ":\"$PATH\"\n"
            "export SANDSHIM_AGENT=claude-code SANDSHIM_SESSION_ID=abc123\n");
  CHECK(world.records.empty());

  FakeWorld no_file;  // an agent or version without CLAUDE_ENV_FILE: nothing written, no error
  CHECK(no_file.run(payload.dump(), agent("claude")).exit_code == 0);
  CHECK(no_file.appended.empty());
}

TEST_CASE("Claude Code: the env file of another session or shim directory does not count",
          "[hooks][agents][claude]") {
  FakeWorld world;
  world.session_scripts = {session_environment_script("/elsewhere/bin", "claude-code", "abc123")};
  CHECK_FALSE(world.run(fixture("claude/pre_tool_use.json"), agent("claude")).out.empty());
  Json other = Json::parse(fixture("claude/pre_tool_use.json"));
  other["session_id"] = "../abc123";
  world.session_scripts = {session_environment_script(k_shim_dir, "claude-code", "abc123")};
  CHECK_FALSE(world.run(other.dump(), agent("claude")).out.empty());
}

TEST_CASE("Claude Code: PermissionDenied closes the decision as not run",
          "[hooks][agents][claude]") {
  FakeWorld world;
  Json payload = {{"session_id", "abc123"},
                  {"transcript_path", "/t.jsonl"},
                  {"cwd", "/home/user/my-project"},
                  {"permission_mode", "default"},
                  {"hook_event_name", "PermissionDenied"},
                  {"tool_name", "Bash"},
                  {"tool_input", {{"command", "rm -rf build"}}},
                  {"tool_use_id", "toolu_02"},
                  {"reason", "denied by the user"}};
  HookReply reply = world.run(payload.dump(), agent("claude"));
  CHECK(reply.out.empty());
  CHECK(reply.exit_code == 0);
  REQUIRE(world.completions.size() == 1);
  CHECK(world.completions[0].first == "toolu_02");
  CHECK(world.completions[0].second.outcome == "not-run");
  CHECK_FALSE(world.completions[0].second.exit_code.has_value());
}

TEST_CASE("Claude Code: a bypass is denied with a reason for the model",
          "[hooks][agents][claude]") {
  FakeWorld world;
  HookReply reply = world.run(fixture("claude/pre_tool_use_bypass.json"), agent("claude"));
  CHECK(reply.exit_code == 0);
  Json specific = out_json(reply)["hookSpecificOutput"];
  CHECK(specific["permissionDecision"] == "deny");
  CHECK(std::string(specific["permissionDecisionReason"])
            .find("`python3 -c 'import os; print(os.getuid())'`") != std::string::npos);
  CHECK_FALSE(specific.contains("updatedInput"));
  REQUIRE(world.records.size() == 1);
  CHECK(world.records[0].decision == sandshim::audit::Decision::deny);
  CHECK(world.records[0].rule == "interpreter-by-path");
}

TEST_CASE("Claude Code: a file tool writing an ordinary file gets no answer, but a record",
          "[hooks][agents][claude]") {
  FakeWorld world;
  HookReply reply = world.run(fixture("claude/pre_tool_use_edit.json"), agent("claude"));
  CHECK(reply.out.empty());
  CHECK(reply.exit_code == 0);
  REQUIRE(world.records.size() == 1);
  CHECK(world.records[0].rule == "file-write");
  CHECK(world.records[0].original_command == "write /home/user/my-project/a.py");
  CHECK(world.records[0].permission_mode == "acceptEdits");
}

TEST_CASE("Claude Code: file tools may not write what the sandbox depends on",
          "[hooks][agents][claude]") {
  sandshim::testing::TempDir home;
  sandshim::testing::EnvOverride env{{"HOME", home.path().string()},
                                     {"XDG_CONFIG_HOME", (home / ".config").string()},
                                     {"XDG_STATE_HOME", (home / ".local/state").string()}};
  FakeWorld world;
  world.policy.audit_db = (home / "audit.db").string();
  Json base = Json::parse(fixture("claude/pre_tool_use_edit.json"));
  base["cwd"] = (home / "project").string();
  struct Case {
    const char* tool;
    std::string path;
    bool refused;
  };
  const Case cases[] = {
      {"Write", (home / ".config/sandshim/config").string(), true},
      {"Edit", (home / "audit.db").string(), true},
      {"Write", (home / "audit.db-wal").string(), true},
      {"MultiEdit", ".claude/settings.json", true},
      {"Write", ".claude/settings.local.json", true},
      {"Write", (home / ".claude/settings.json").string(), true},
      {"Write", "sub/.sandshim.conf", true},
      {"Write", ".git/hooks/pre-commit", true},
      {"Edit", ".git/config", true},
      {"Write", ".codex/hooks.json", true},
      {"Write", ".gemini/settings.json", true},
      {"Write", k_shim_dir + "/python3", true},
      {"Write", (home / ".bashrc").string(), true},
      {"Edit", (home / ".profile").string(), true},
      {"MultiEdit", (home / ".zshrc").string(), true},
      {"Write", (home / ".config/fish/conf.d/x.fish").string(), true},
      {"Write", "/etc/profile.d/agent.sh", true},
      {"Write", "../.bash_profile", true},
      {"NotebookEdit", "notes.ipynb", false},
      {"Write", "project.bashrc", false},
      {"Write", "src/main.py", false},
      {"Write", ".claude/skills/x/SKILL.md", false},
      {"Edit", "docs/settings.json", false},
  };
  for (const Case& c : cases) {
    Json payload = base;
    payload["tool_name"] = c.tool;
    payload["tool_input"] = Json::object();
    payload["tool_input"][std::string(c.tool) == "NotebookEdit" ? "notebook_path" : "file_path"] =
        c.path;
    HookReply reply = world.run(payload.dump(), agent("claude"));
    INFO(c.tool << " " << c.path << " -> " << reply.out);
    if (!c.refused) {
      CHECK(reply.out.empty());
      continue;
    }
    Json specific = out_json(reply)["hookSpecificOutput"];
    CHECK(specific["permissionDecision"] == "deny");
    std::string reason = specific["permissionDecisionReason"];
    CHECK(reason.starts_with("sandshim: \"" + c.path + "\" is "));
    CHECK(reason.find("sandshim: sandshim:") == std::string::npos);
    CHECK_FALSE(reason.ends_with("."));
    CHECK(world.records.back().rule == "protected-path");
  }
}

TEST_CASE("a link in the workspace to a protected file is refused for what it points at",
          "[hooks][agents]") {
  sandshim::testing::TempDir home;
  sandshim::testing::EnvOverride env{{"HOME", home.path().string()},
                                     {"XDG_CONFIG_HOME", (home / ".config").string()}};
  std::filesystem::create_directories(home / ".config/sandshim");
  std::filesystem::create_directories(home / "project");
  std::filesystem::create_symlink(home / ".config/sandshim", home / "project/cfg");
  FakeWorld world;
  Json payload = Json::parse(fixture("claude/pre_tool_use_edit.json"));
  payload["cwd"] = (home / "project").string();
  payload["tool_input"]["file_path"] = "cfg/config";
  Json specific = out_json(world.run(payload.dump(), agent("claude")))["hookSpecificOutput"];
  CHECK(specific["permissionDecision"] == "deny");
  CHECK(std::string(specific["permissionDecisionReason"]).find("sandshim's configuration") !=
        std::string::npos);
}

TEST_CASE("Claude Code: PostToolUse and PostToolUseFailure complete the decision",
          "[hooks][agents][claude]") {
  FakeWorld world;
  CHECK(world.run(fixture("claude/post_tool_use.json")).out.empty());
  CHECK(world.run(fixture("claude/post_tool_use_failure.json")).out.empty());
  REQUIRE(world.completions.size() == 2);
  CHECK(world.completions[0].first == "toolu_01ABC123");
  CHECK(world.completions[0].second.exit_code == 0);
  CHECK(world.completions[0].second.outcome == "ran");
  CHECK(world.completions[0].second.session_id == "abc123");
  CHECK(world.completions[0].second.tool_response_tail == "3 passed in 0.02s\n");
  CHECK(world.completions[1].second.exit_code == 137);
  CHECK(world.records.empty());
}

TEST_CASE("Claude Code: an event sandshim does not handle is refused", "[hooks][agents][claude]") {
  FakeWorld world;
  Json payload = Json::parse(fixture("claude/stop.json"));
  payload["hook_event_name"] = "Notification";
  HookReply reply = world.run(payload.dump(), agent("claude"));
  CHECK(reply.exit_code == 2);
  CHECK(reply.out.empty());
  CHECK(reply.err.find("\"Notification\"") != std::string::npos);
  REQUIRE(world.records.size() == 1);
  CHECK(world.records[0].rule == "unknown-event");
}

TEST_CASE("Claude Code: Stop closes the session's decisions the agent itself refused",
          "[hooks][agents][claude]") {
  FakeWorld world;
  HookReply reply = world.run(fixture("claude/stop.json"), agent("claude"));
  CHECK(reply.exit_code == 0);
  CHECK(reply.out.empty());
  CHECK(world.records.empty());
  CHECK(world.completions.empty());
  REQUIRE(world.closed_sessions.size() == 1);
  CHECK(world.closed_sessions[0].first == "claude-code");
  CHECK(world.closed_sessions[0].second == "abc123");
}

TEST_CASE("Claude Code: SessionEnd closes its session through session_close; no session, no call",
          "[hooks][agents][claude]") {
  FakeWorld world;
  Json payload = Json::parse(fixture("claude/stop.json"));
  payload["hook_event_name"] = "SessionEnd";
  CHECK(world.run(payload.dump(), agent("claude")).exit_code == 0);
  REQUIRE(world.closed_sessions.size() == 1);
  CHECK(world.closed_sessions[0].second == "abc123");
  payload["session_id"] = "";
  CHECK(world.run(payload.dump(), agent("claude")).exit_code == 0);
  CHECK(world.closed_sessions.size() == 1);
  CHECK(world.completions.empty());
}

TEST_CASE("a refusal of the workspace's own .sandshim.conf is recorded in the user's audit",
          "[hooks][agents]") {
  FakeWorld world;
  world.policy_fails = true;
  HookReply reply = world.run(fixture("claude/pre_tool_use.json"), agent("claude"));
  CHECK(reply.exit_code == 2);
  REQUIRE(world.records.size() == 1);
  CHECK(world.records[0].decision == sandshim::audit::Decision::deny);
}

TEST_CASE("Codex: fixtures match the input schema Codex 0.171 embeds", "[hooks][agents][codex]") {
  for (const char* name : {"pre_tool_use", "pre_tool_use_bypass", "pre_tool_use_apply_patch"}) {
    INFO(name);
    CHECK(schema_errors(Json::parse(fixture(std::string("codex/") + name + ".json")),
                        schema("pre-tool-use.command.input"))
              .empty());
  }
  CHECK(schema_errors(Json::parse(fixture("codex/post_tool_use.json")),
                      schema("post-tool-use.command.input"))
            .empty());
}

TEST_CASE("Codex: a rewrite is allow with updatedInput and nothing else",
          "[hooks][agents][codex]") {
  FakeWorld world;
  HookReply reply = world.run(fixture("codex/pre_tool_use.json"), agent("codex"));
  require_codex_valid(reply, "PreToolUse");
  Json specific = out_json(reply)["hookSpecificOutput"];
  CHECK(specific.size() == 3);
  CHECK(specific["permissionDecision"] == "allow");
  CHECK(std::string(specific["updatedInput"]["command"])
            .ends_with("; python3 scripts/check.py --fast"));
  CHECK(world.records.at(0).agent == "codex");
  CHECK(world.records.at(0).tool_use_id == "call_8f2c1b");
  CHECK(world.records.at(0).answer == "allow+updatedInput");
  CHECK(world.records.at(0).permission_mode == "default");
}

TEST_CASE("Codex: apply_patch may not touch what the sandbox depends on",
          "[hooks][agents][codex]") {
  FakeWorld world;
  HookReply ordinary = world.run(fixture("codex/pre_tool_use_apply_patch.json"), agent("codex"));
  CHECK(ordinary.out.empty());
  CHECK(world.records.at(0).original_command == "write a.py");
  Json payload = Json::parse(fixture("codex/pre_tool_use_apply_patch.json"));
  payload["tool_input"]["command"] =
      "*** Begin Patch\n*** Update File: a.py\n*** Move to: .codex/hooks.json\n@@\n-x\n+y\n"
      "*** End Patch";
  HookReply moved = world.run(payload.dump(), agent("codex"));
  require_codex_valid(moved, "PreToolUse");
  Json specific = out_json(moved)["hookSpecificOutput"];
  CHECK(specific["permissionDecision"] == "deny");
  CHECK(std::string(specific["permissionDecisionReason"]).find(".codex/hooks.json") !=
        std::string::npos);
  payload["tool_input"]["command"] =
      "*** Begin Patch\n*** Add File: .sandshim.conf\n+x\n*** End Patch";
  CHECK(out_json(world.run(payload.dump(),
                           agent("codex")))["hookSpecificOutput"]["permissionDecision"] == "deny");
  sandshim::testing::TempDir home;
  sandshim::testing::EnvOverride env{{"HOME", home.path().string()}};
  payload["tool_input"]["command"] =
      "*** Begin Patch\n*** Update File: " + (home / ".bashrc").string() +
      "\n@@\n+python3 /tmp/x.py\n*** End Patch";
  Json startup = out_json(world.run(payload.dump(), agent("codex")))["hookSpecificOutput"];
  CHECK(startup["permissionDecision"] == "deny");
  CHECK(std::string(startup["permissionDecisionReason"]).find("a shell start-up file") !=
        std::string::npos);
}

TEST_CASE("Codex: every answer sandshim gives validates against Codex's output schema",
          "[hooks][agents][codex]") {
  FakeWorld world;
  Json base = Json::parse(fixture("codex/pre_tool_use.json"));
  for (const char* command : {"python3 x.py", "git status", "/usr/bin/python3 x.py", "eval \"$X\"",
                              "echo 'broken", "sudo ls", "env -i node x", "pytest"}) {
    for (const char* mode : {"path", "wrap", "deny"}) {
      world.policy.hook_mode = sandshim::shim::hook_mode_from(mode).value();
      Json payload = base;
      payload["tool_input"]["command"] = command;
      HookReply reply = world.run(payload.dump(), agent("codex"));
      INFO(mode << ": " << command << " -> " << reply.out);
      require_codex_valid(reply, "PreToolUse");
      CHECK((reply.exit_code == 0 || (reply.exit_code == 2 && !reply.err.empty())));
    }
  }
  world.policy.hook_mode = sandshim::shim::HookMode::path;
  for (const char* name : {"codex/pre_tool_use_bypass.json", "codex/pre_tool_use_apply_patch.json",
                           "malformed/truncated.json", "malformed/claude_no_command.json"}) {
    INFO(name);
    require_codex_valid(world.run(fixture(name), agent("codex")), "PreToolUse");
  }
  require_codex_valid(world.run(fixture("codex/post_tool_use.json"), agent("codex")),
                      "PostToolUse");
  world.policy_fails = true;
  require_codex_valid(world.run(fixture("codex/pre_tool_use.json"), agent("codex")), "PreToolUse");
}

TEST_CASE("Codex: a refusal has a non-empty reason", "[hooks][agents][codex]") {
  FakeWorld world;
  HookReply denied = world.run(fixture("codex/pre_tool_use_bypass.json"), agent("codex"));
  Json specific = out_json(denied)["hookSpecificOutput"];
  CHECK(specific["permissionDecision"] == "deny");
  CHECK(std::string(specific["permissionDecisionReason"]).find("env -i") != std::string::npos);
  HookReply broken = world.run("{", agent("codex"));
  CHECK(broken.exit_code == 2);
  CHECK_FALSE(broken.err.empty());
  CHECK(world.run(fixture("codex/post_tool_use.json"), agent("codex")).out.empty());
  CHECK(world.completions.at(0).second.tool_response_tail == "ok: 12 files checked\n");
}

TEST_CASE("Cursor: preToolUse rewrites through updated_input", "[hooks][agents][cursor]") {
  FakeWorld world;
  Json answer = out_json(world.run(fixture("cursor/pre_tool_use.json"), agent("cursor")));
  CHECK(answer["permission"] == "allow");
  CHECK(answer["updated_input"]["working_directory"] == "/home/user/my-project");
  CHECK(std::string(answer["updated_input"]["command"])
            .ends_with("; npm test && python3 tools/report.py"));
  CHECK(world.records.at(0).session_id == "c0a1b2c3-0000-4000-8000-000000000001");
  CHECK(world.records.at(0).tool_use_id == "abc123");
  CHECK(out_json(world.run(fixture("cursor/pre_tool_use_read.json"), agent("cursor"))) ==
        Json{{"permission", "allow"}});
}

TEST_CASE("Cursor: beforeShellExecution cannot rewrite, so interpreters are refused",
          "[hooks][agents][cursor]") {
  FakeWorld world;
  Json denied = out_json(world.run(fixture("cursor/before_shell_execution.json"), agent("cursor")));
  CHECK(denied["permission"] == "deny");
  CHECK(std::string(denied["agent_message"]).find("sandshim run -- python3") != std::string::npos);
  CHECK(denied.contains("user_message"));
  Json allowed =
      out_json(world.run(fixture("cursor/before_shell_execution_plain.json"), agent("cursor")));
  CHECK(allowed == Json{{"permission", "allow"}});
  CHECK(world.records.at(0).rule == "cannot-rewrite");
}

TEST_CASE("Cursor: post events complete decisions, also without a tool_use_id",
          "[hooks][agents][cursor]") {
  FakeWorld world;
  world.run(fixture("cursor/before_shell_execution_plain.json"), agent("cursor"));
  CHECK(world.run(fixture("cursor/after_shell_execution.json"), agent("cursor")).out == "{}\n");
  CHECK(world.run(fixture("cursor/post_tool_use.json"), agent("cursor")).out == "{}\n");
  world.run(fixture("cursor/post_tool_use_failure.json"), agent("cursor"));
  REQUIRE(world.completions.size() == 3);
  CHECK(world.completions[0].first == world.records.at(0).tool_use_id);
  CHECK(world.completions[0].first.starts_with("sandshim-"));
  CHECK(world.completions[1].first == "abc123");
  CHECK(world.completions[1].second.exit_code == 0);
  CHECK_FALSE(world.completions[2].second.exit_code);
  CHECK(world.completions[2].second.tool_response_tail == "Command timed out after 30s");
}

TEST_CASE("Cursor running Claude Code's hooks is answered in Cursor's format",
          "[hooks][agents][cursor]") {
  FakeWorld world;
  Json answer = out_json(world.run(fixture("cursor/pre_tool_use.json"), agent("claude")));
  CHECK(answer["permission"] == "allow");
  CHECK(world.records.at(0).agent == "cursor");
}

TEST_CASE("Gemini CLI: a rewrite sends the complete tool_input", "[hooks][agents][gemini]") {
  FakeWorld world;
  HookReply reply = world.run(fixture("gemini/before_tool.json"), agent("gemini"));
  CHECK(reply.exit_code == 0);
  Json answer = out_json(reply);
  CHECK(answer["decision"] == "allow");
  Json input = answer["hookSpecificOutput"]["tool_input"];
  CHECK(input["description"] == "Generate data");
  CHECK(input["dir_path"] == "tools");
  CHECK(input["is_background"] == false);
  CHECK(std::string(input["command"]).ends_with("; node scripts/gen.js > out.json"));
  CHECK(world.records.at(0).cwd == "/home/user/my-project/tools");
  CHECK(world.records.at(0).agent == "gemini-cli");

  world.run(fixture("gemini/after_tool.json"), agent("gemini"));
  REQUIRE(world.completions.size() == 1);
  CHECK(world.completions[0].first == world.records.at(0).tool_use_id);
  CHECK(world.completions[0].second.exit_code == 0);

  // AfterTool reports the rewritten command; it still completes the same decision.
  Json after = Json::parse(fixture("gemini/after_tool.json"));
  after["tool_input"]["command"] = input["command"];
  world.run(after.dump(), agent("gemini"));
  CHECK(world.completions.at(1).first == world.records.at(0).tool_use_id);
}

TEST_CASE("Gemini CLI: shims first on the hook's PATH (BASH_ENV) mean no rewrite; Codex's not",
          "[hooks][agents][gemini]") {
  FakeWorld world;
  world.agent_path = k_shim_dir + ":/usr/local/bin:/usr/bin:/bin";
  // Gemini CLI runs its hooks and its commands as `bash -c` in one environment: the command
  // finds the shims too, and goes as the model wrote it, where the user's rules match it.
  HookReply gemini = world.run(fixture("gemini/before_tool.json"), agent("gemini"));
  CHECK(gemini.out == "{}\n");
  CHECK(world.records.at(0).rule == "shim-on-path");
  // Codex runs its commands in a login shell, whose profile may set PATH anew: still rewritten.
  HookReply codex = world.run(fixture("codex/pre_tool_use.json"), agent("codex"));
  CHECK(world.records.at(1).rule == "path-rewrite");
  CHECK_THAT(codex.out, Catch::Contains("updatedInput"));
  // A bypass is refused all the same.
  HookReply bypass = world.run(fixture("gemini/before_tool_bypass.json"), agent("gemini"));
  CHECK(out_json(bypass)["decision"] == "deny");
}

TEST_CASE("Codex: with its routing script installed, routed commands source it",
          "[hooks][agents][codex]") {
  FakeWorld world;
  std::filesystem::path script = sandshim::xdg_directory("state") / "sandshim" / "codex-route.sh";
  world.files[script] = routing_script_text("/somewhere/else");  // another shim directory's
  HookReply stale = world.run(fixture("codex/pre_tool_use.json"), agent("codex"));
  CHECK_THAT(stale.out, Catch::Contains("export PATH="));
  world.files[script] = routing_script_text(k_shim_dir);
  HookReply reply = world.run(fixture("codex/pre_tool_use.json"), agent("codex"));
  Json answer = out_json(reply);
  std::string command = answer["hookSpecificOutput"]["updatedInput"]["command"];
  CHECK(command.starts_with(". " + script.string() +
                            " codex 0199a3f2-6f1e-7c53-9a1b-2f3c4d5e6f70 call_8f2c1b && "));
  CHECK(world.records.at(1).rule == "path-rewrite");
}

TEST_CASE("Gemini CLI: refusals are JSON denies with exit 0", "[hooks][agents][gemini]") {
  FakeWorld world;
  HookReply denied = world.run(fixture("gemini/before_tool_bypass.json"), agent("gemini"));
  CHECK(denied.exit_code == 0);
  Json answer = out_json(denied);
  CHECK(answer["decision"] == "deny");
  CHECK(std::string(answer["reason"]).find("command -p") != std::string::npos);
  CHECK(world.run(fixture("gemini/before_tool_read_file.json"), agent("gemini")).out == "{}\n");
  HookReply broken = world.run(fixture("malformed/gemini_unparseable_command.json"));
  CHECK(broken.exit_code == 0);
  CHECK(out_json(broken)["decision"] == "deny");
  CHECK(world.records.back().rule == "unparseable");
}

TEST_CASE("Gemini CLI: a shell result without \"Exit Code:\" exited 0, one with an error did not",
          "[hooks][agents][gemini]") {
  FakeWorld world;
  Json after = Json::parse(fixture("gemini/after_tool.json"));
  after["tool_response"]["llmContent"] = "Command: node x.js\nDirectory: (root)\nOutput: done";
  world.run(after.dump(), agent("gemini"));
  after["tool_response"]["llmContent"] = "Command: node x.js\nOutput: (empty)\nExit Code: 3";
  world.run(after.dump(), agent("gemini"));
  after["tool_response"]["llmContent"] = "Command: node x.js\nSignal: 9";
  world.run(after.dump(), agent("gemini"));
  after["tool_response"] = {{"llmContent", "Command: node x.js"}, {"error", {{"message", "x"}}}};
  world.run(after.dump(), agent("gemini"));
  REQUIRE(world.completions.size() == 4);
  CHECK(world.completions[0].second.exit_code == 0);
  CHECK(world.completions[1].second.exit_code == 3);
  CHECK_FALSE(world.completions[2].second.exit_code.has_value());
  CHECK_FALSE(world.completions[3].second.exit_code.has_value());
}

TEST_CASE("Gemini CLI: write_file and replace may not touch what the sandbox depends on",
          "[hooks][agents][gemini]") {
  FakeWorld world;
  Json payload = Json::parse(fixture("gemini/before_tool.json"));
  payload["tool_name"] = "write_file";
  payload["tool_input"] = {{"file_path", "/home/user/my-project/.gemini/settings.json"},
                           {"content", "{}"}};
  Json denied = out_json(world.run(payload.dump(), agent("gemini")));
  CHECK(denied["decision"] == "deny");
  CHECK(std::string(denied["reason"]).find(".gemini/") != std::string::npos);
  payload["tool_name"] = "replace";
  payload["tool_input"] = {
      {"file_path", "/home/user/my-project/src/a.ts"}, {"old_string", "a"}, {"new_string", "b"}};
  CHECK(world.run(payload.dump(), agent("gemini")).out == "{}\n");
  sandshim::testing::TempDir home;
  sandshim::testing::EnvOverride env{{"HOME", home.path().string()}};
  payload["tool_input"] = {{"file_path", (home / ".profile").string()},
                           {"old_string", "a"},
                           {"new_string", "python3 /tmp/x.py"}};
  Json startup = out_json(world.run(payload.dump(), agent("gemini")));
  CHECK(startup["decision"] == "deny");
  CHECK(std::string(startup["reason"]).find("a shell start-up file") != std::string::npos);
}

TEST_CASE("reasons are one line per fact, one prefix each, no final period", "[hooks]") {
  CHECK(agent_message("sandshim: sandshim: the hook payload is not JSON.") ==
        "sandshim: the hook payload is not JSON");
  CHECK(agent_message("sandshim: a.\n  sandshim: b. \n\nc") ==
        "sandshim: a\nsandshim: b\nsandshim: c");
  CHECK(agent_message("run `sandshim run -- sh -c '…'`.") ==
        "sandshim: run `sandshim run -- sh -c '…'`");
  FakeWorld world;
  Json payload = Json::parse(fixture("claude/pre_tool_use.json"));
  payload["tool_input"]["command"] = "/usr/bin/python3 x.py";
  std::string reason = out_json(
      world.run(payload.dump(), agent("claude")))["hookSpecificOutput"]["permissionDecisionReason"];
  CHECK_FALSE(reason.ends_with("."));
  CHECK(reason.find("sandshim: sandshim:") == std::string::npos);
}

TEST_CASE("without --agent the payload's shape names the agent", "[hooks][agents]") {
  const std::pair<const char*, const char*> cases[] = {
      {"claude/pre_tool_use.json", "claude-code"},
      {"codex/pre_tool_use.json", "codex"},
      {"cursor/before_shell_execution.json", "cursor"},
      {"gemini/before_tool.json", "gemini-cli"},
  };
  for (const auto& [name, expected] : cases) {
    FakeWorld world;
    world.run(fixture(name));
    INFO(name);
    REQUIRE(world.records.size() == 1);
    CHECK(world.records[0].agent == expected);
  }
  FakeWorld world;
  HookReply unknown = world.run(fixture("malformed/unknown_shape.json"));
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.out.empty());
  CHECK(world.records.at(0).rule == "unknown-agent");
}

// Every agent of the registry: a malformed payload is a refusal that blocks, by exit 2 or by a
// JSON deny, and a deny in the audit. Each agent's own test checks its exact form.
TEST_CASE("malformed payloads are refused in each agent's own way", "[hooks][agents]") {
  for (const char* name :
       {"malformed/not_json.txt", "malformed/array.json", "malformed/empty.txt",
        "malformed/truncated.json", "malformed/claude_no_command.json",
        "malformed/claude_tool_input_string.json", "malformed/claude_command_number.json"}) {
    for (Agent which : all_agents()) {
      FakeWorld world;
      HookReply reply = world.run(fixture(name), agent(which->flag));
      INFO(name << " as " << which->flag << ": " << reply.out << reply.err);
      bool json_deny = false;
      if (!reply.out.empty()) {
        Json answer = out_json(reply);
        json_deny = answer.value("permission", "") == "deny" ||
                    answer.value("decision", "") == "deny" ||
                    answer["hookSpecificOutput"].value("permissionDecision", "") == "deny";
      }
      CHECK((reply.exit_code == 2 || (reply.exit_code == 0 && json_deny)));
      CHECK((reply.exit_code != 2 || !reply.err.empty()));
      CHECK((reply.out.empty() || json_deny));
      REQUIRE(world.records.size() == 1);
      CHECK(world.records[0].decision == sandshim::audit::Decision::deny);
    }
  }
}

TEST_CASE("each agent refuses a malformed payload in its own form", "[hooks][agents]") {
  struct Expect {
    const char* agent;
    int exit_code;
    bool json_required;  // the block is in the JSON (else exit 2 blocks; stdout may be empty)
  };
  const Expect agents[] = {
      {"claude", 2, false}, {"codex", 2, false}, {"cursor", 2, true}, {"gemini", 0, true}};
  for (const Expect& expect : agents) {
    FakeWorld world;
    HookReply reply = world.run(fixture("malformed/claude_no_command.json"), agent(expect.agent));
    INFO(expect.agent << ": " << reply.out << reply.err);
    CHECK(reply.exit_code == expect.exit_code);
    CHECK((!expect.json_required || !reply.out.empty()));
  }
}

TEST_CASE("an oversized payload is refused unread", "[hooks][agents]") {
  FakeWorld world;
  std::string huge = "{\"hook_event_name\":\"PreToolUse\",\"x\":\"" +
                     std::string(k_max_payload_bytes, 'a') + "\"}";
  HookReply reply = world.run(huge, agent("claude"));
  CHECK(reply.exit_code == 2);
  CHECK(world.records.at(0).rule == "payload-too-large");
  CHECK(world.run(huge, agent("gemini")).out.find("\"deny\"") != std::string::npos);
}

TEST_CASE("internal errors fail closed before a decision, never after", "[hooks][agents]") {
  FakeWorld world;
  world.policy_fails = true;
  HookReply claude = world.run(fixture("claude/pre_tool_use.json"), agent("claude"));
  CHECK(claude.exit_code == 2);
  CHECK(claude.err.find("bad config") != std::string::npos);
  CHECK(out_json(world.run(fixture("gemini/before_tool.json"), agent("gemini")))["decision"] ==
        "deny");
  HookReply after = world.run(fixture("claude/post_tool_use.json"), agent("claude"));
  CHECK(after.exit_code == 0);
  CHECK(after.out.empty());
}

TEST_CASE("a decision that cannot be recorded is not acted on", "[hooks][agents]") {
  FakeWorld world;
  world.audit_fails = true;
  HookReply reply = world.run(fixture("claude/pre_tool_use.json"), agent("claude"));
  CHECK(reply.exit_code == 2);
  CHECK(reply.err.find("audit database") != std::string::npos);
  world.policy.audit_required = false;
  CHECK(
      out_json(world.run(fixture("codex/pre_tool_use.json"), agent("codex")))["hookSpecificOutput"]
          .contains("updatedInput"));
}

TEST_CASE("the --event option refuses payloads for another event", "[hooks][agents]") {
  FakeWorld world;
  HookOptions options = agent("claude");
  options.expected_event = "PostToolUse";
  HookReply reply = world.run(fixture("claude/pre_tool_use.json"), options);
  CHECK(reply.exit_code == 2);
  CHECK(world.records.at(0).rule == "event-mismatch");
}

// What a new agent's descriptor must hold for the rest of sandshim to use it without a line
// of its own anywhere else.
TEST_CASE("every descriptor of the registry is complete, and its names are its own",
          "[hooks][agents]") {
  std::set<std::string_view> flags;
  std::set<std::string_view> audit_names;
  for (Agent which : all_agents()) {
    INFO(which->flag);
    CHECK(flags.insert(which->flag).second);
    CHECK(audit_names.insert(which->audit_name).second);
    CHECK(agent_named(which->flag) == which);
    CHECK(which->install_help.starts_with("  " + std::string(which->flag) + " "));
    CHECK(which->install_help.ends_with("\n"));
    CHECK_FALSE(which->hook_help.empty());
    CHECK_FALSE(which->session_markers.empty());
    CHECK_FALSE(which->workspace_names.empty());
    CHECK_FALSE(which->user_places().empty());
    CHECK_FALSE(which->project_places().empty());
    AgentSettings settings = which->settings(InstallMode::path);
    CHECK(settings.name == which->flag);
    CHECK(settings.display == which->display);
    CHECK(settings.user_file.is_absolute());
    std::string within = settings.user_file.lexically_relative(which->config_dir()).string();
    CHECK((!within.empty() && !within.starts_with("..")));
  }
  const std::vector<sandshim::shim::KnownAgent>& known = sandshim::shim::known_agents();
  REQUIRE(known.size() == all_agents().size());  // published at start-up (tests/unit/main.cpp)
  for (size_t i = 0; i < known.size(); ++i) {
    CHECK(known[i].audit_name == all_agents()[i]->audit_name);
  }
}
