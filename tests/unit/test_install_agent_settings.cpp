#include <catch2/catch.hpp>

#include "install/agent_settings.hpp"
#include "install/json_text.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::install;
using sandshim::testing::data_dir;
using sandshim::testing::read_text;
using Json = nlohmann::ordered_json;

namespace {

const std::string k_binary = "/usr/local/bin/sandshim";

AgentSettings settings_for(const std::string& agent) {
  auto settings = agent_settings_named(agent);
  REQUIRE(settings);
  return *settings;
}

std::string fixture(const std::string& name) {
  return read_text(data_dir() / "install" / name);
}

// The document with sandshim's handlers (and what only held them) taken out, for comparing
// what an install must not touch.
Json without_sandshim(const std::string& text, const AgentSettings& settings) {
  return JsonText(unmerge_hooks(text, settings).text).value();
}

struct Case {
  const char* agent;
  const char* file;
};

const Case k_cases[] = {
    {"claude", "claude_settings_tabs.json"},  {"claude", "claude_settings_minified.json"},
    {"claude", "claude_settings_empty.json"}, {"codex", "codex_hooks.json"},
    {"cursor", "cursor_hooks.json"},          {"gemini", "gemini_settings.json"},
};

}  // namespace

TEST_CASE("install merges into realistic settings and uninstall restores them byte for byte",
          "[install][settings]") {
  for (const Case& c : k_cases) {
    INFO(c.agent << " " << c.file);
    AgentSettings settings = settings_for(c.agent);
    std::string original = fixture(c.file);
    std::string command = hook_command_for(k_binary, c.agent);

    Merged installed = merge_hooks(original, settings, command);
    CHECK(installed.change == Change::updated);
    CHECK(has_sandshim_hooks(installed.text, settings));
    CHECK(without_sandshim(installed.text, settings) == JsonText(original).value());
    for (const HookEntry& entry : settings.entries) {
      CHECK(JsonText(installed.text).value()["hooks"].contains(entry.event));
    }

    Merged again = merge_hooks(installed.text, settings, command);
    CHECK(again.change == Change::unchanged);
    CHECK(again.text == installed.text);

    Merged removed = unmerge_hooks(installed.text, settings);
    CHECK(removed.change == Change::removed);
    CHECK(removed.text == original);
    CHECK(unmerge_hooks(removed.text, settings).change == Change::unchanged);
  }
}

TEST_CASE("a missing settings file is created, and uninstall leaves only its skeleton",
          "[install][settings]") {
  for (const AgentSettings& settings : all_agent_settings()) {
    INFO(settings.name);
    Merged created = merge_hooks(std::nullopt, settings, hook_command_for(k_binary, settings.name));
    CHECK(created.change == Change::created);
    Json value = JsonText(created.text).value();
    CHECK(value["hooks"].size() == settings.entries.size());
    if (settings.name == "cursor") {
      CHECK(value["version"] == 1);
    }
    Merged removed = unmerge_hooks(created.text, settings);
    CHECK(removed.change == Change::removed);
    CHECK(removed.only_skeleton_left);
    CHECK(JsonText(removed.text).value() == settings.skeleton);
    CHECK(unmerge_hooks(std::nullopt, settings).change == Change::absent);
  }
}

// The complete file each agent gets, compared with tests/data/install/installed_<agent>.json
// (SANDSHIM_UPDATE_GOLDEN=1 rewrites them; review the diff). A newer agent's own test
// (test_hooks_agent_<agent>.cpp) holds its golden text.
TEST_CASE("each agent gets exactly the settings in its golden file", "[install][settings]") {
  for (const char* agent : {"claude", "codex", "cursor", "gemini"}) {
    std::string text =
        merge_hooks(std::nullopt, settings_for(agent), hook_command_for(k_binary, agent)).text;
    std::filesystem::path golden =
        data_dir() / "install" / ("installed_" + std::string(agent) + ".json");
    if (std::getenv("SANDSHIM_UPDATE_GOLDEN") != nullptr) {
      sandshim::testing::write_text(golden, text);
    }
    INFO(agent << ":\n" << text);
    CHECK(text == read_text(golden));
  }
}

TEST_CASE("every hook command fails closed and no handler approves", "[install][settings]") {
  for (const AgentSettings& settings : all_agent_settings()) {
    std::string command = hook_command_for(k_binary, settings.name);
    CHECK(command.starts_with(k_binary + " hook --agent " + settings.name + " || {"));
    CHECK(command.find("exit 2; }") != std::string::npos);
    Json value = JsonText(merge_hooks(std::nullopt, settings, command).text).value();
    std::string dumped = value.dump();
    CHECK(dumped.find("rewrite-approval") == std::string::npos);
    CHECK(dumped.find("permissions") == std::string::npos);
  }
  Json claude = JsonText(merge_hooks(std::nullopt, settings_for("claude"),
                                     hook_command_for(k_binary, "claude"))
                             .text)
                    .value();
  CHECK(claude["hooks"]["PreToolUse"][0]["matcher"] == "Bash|Write|Edit|MultiEdit|NotebookEdit");
  CHECK_FALSE(claude["hooks"]["SessionStart"][0].contains("matcher"));
  CHECK(claude["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] == 60);
  Json gemini = JsonText(merge_hooks(std::nullopt, settings_for("gemini"),
                                     hook_command_for(k_binary, "gemini"))
                             .text)
                    .value();
  CHECK(gemini["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] == 60000);  // milliseconds
}

TEST_CASE("a moved binary updates sandshim's entries in place", "[install][settings]") {
  AgentSettings settings = settings_for("claude");
  std::string original = fixture("claude_settings_old_binary.json");
  Merged updated = merge_hooks(original, settings, hook_command_for(k_binary, "claude"));
  CHECK(updated.change == Change::updated);
  Json value = JsonText(updated.text).value();
  CHECK(value["hooks"]["PreToolUse"].size() == 1);
  CHECK(value["hooks"]["PreToolUse"][0] ==
        JsonText(merge_hooks(std::nullopt, settings, hook_command_for(k_binary, "claude")).text)
            .value()["hooks"]["PreToolUse"][0]);  // matcher and timeout as this version writes
  CHECK(value["hooks"]["PostToolUse"][0]["hooks"].size() == 2);
  CHECK(value["hooks"]["PostToolUse"][0]["hooks"][1]["command"] ==
        hook_command_for(k_binary, "claude"));
  CHECK(value["hooks"]["PostToolUse"][0]["hooks"][1]["timeout"] == 60);

  Merged removed = unmerge_hooks(updated.text, settings);
  Json left = JsonText(removed.text).value();
  CHECK_FALSE(left["hooks"].contains("PreToolUse"));
  CHECK(left["hooks"]["PostToolUse"][0]["hooks"] ==
        Json::array({Json{{"type", "command"}, {"command", "./audit.sh"}}}));
}

TEST_CASE("settings sandshim cannot read are refused, never rewritten", "[install][settings]") {
  AgentSettings settings = settings_for("claude");
  for (const char* name :
       {"claude_settings_trailing_comma.json", "claude_settings_comments.json",
        "claude_settings_duplicate_key.json", "claude_settings_hooks_array.json"}) {
    INFO(name);
    CHECK_THROWS_AS(merge_hooks(fixture(name), settings, hook_command_for(k_binary, "claude")),
                    JsonTextError);
  }
}

TEST_CASE("only sandshim's own handlers are recognised", "[install][settings]") {
  CHECK(is_sandshim_hook_command("/usr/local/bin/sandshim hook --agent claude", "claude"));
  CHECK(is_sandshim_hook_command("'/opt/my tools/sandshim' hook --agent codex --event PreToolUse",
                                 "codex"));
  CHECK_FALSE(is_sandshim_hook_command("/usr/local/bin/sandshim hook --agent claude", "codex"));
  CHECK_FALSE(is_sandshim_hook_command("./format.sh hook --agent claude", "claude"));
  CHECK_FALSE(is_sandshim_hook_command("sandshim hook --agent claude; rm -rf ~", "claude"));
  CHECK(hook_command_for("/opt/my tools/sandshim", "cursor")
            .starts_with("'/opt/my tools/sandshim' hook --agent cursor || { s=$?;"));
  CHECK(is_sandshim_hook_command(hook_command_for("/opt/sandshim", "cursor"), "cursor"));
  CHECK_FALSE(is_sandshim_hook_command("/usr/local/bin/sandshim hook --agent claude || rm -rf ~",
                                       "claude"));
}

TEST_CASE("an event array the user left empty loses it on uninstall", "[install][settings]") {
  // Documented limit: without state sandshim cannot tell an empty array it filled from one it
  // created, so uninstall removes the emptied event; everything else is restored exactly.
  AgentSettings settings = settings_for("cursor");
  std::string original = "{\n  \"hooks\": {\n    \"preToolUse\": [],\n    \"x\": 1\n  }\n}\n";
  Merged installed = merge_hooks(original, settings, hook_command_for(k_binary, "cursor"));
  Merged removed = unmerge_hooks(installed.text, settings);
  CHECK(removed.text == "{\n  \"hooks\": {\n    \"x\": 1\n  }\n}\n");
}

TEST_CASE(
    "wrap mode sets Claude Code's shell prefix and writes the hooks in exec form; a path "
    "install or uninstall takes both back",
    "[install][settings]") {
  auto wrap = agent_settings_named("claude", InstallMode::wrap);
  REQUIRE(wrap);
  std::string original = fixture("claude_settings_tabs.json");
  std::string command = hook_command_for(k_binary, "claude");
  Merged installed = merge_hooks(original, *wrap, command, k_binary);
  Json value = JsonText(installed.text).value();
  CHECK(value["env"]["CLAUDE_CODE_SHELL_PREFIX"] == k_binary + " -c");
  CHECK(claude_shell_prefix_in(installed.text) == k_binary + " -c");
  const Json& pre = value["hooks"]["PreToolUse"].back()["hooks"][0];
  CHECK(pre["command"] == "/bin/sh");
  CHECK(pre["args"] == Json::array({"-c", command}));
  CHECK(handler_script(pre) == command);
  CHECK(merge_hooks(installed.text, *wrap, command, k_binary).change == Change::unchanged);

  Merged path = merge_hooks(installed.text, settings_for("claude"), command, k_binary);
  CHECK(path.text == merge_hooks(original, settings_for("claude"), command, k_binary).text);
  CHECK(claude_shell_prefix_in(path.text).empty());
  CHECK(unmerge_hooks(installed.text, *wrap).text == original);
}

TEST_CASE("allowAllUnixSockets is added beside the user's sandbox settings and removed exactly",
          "[install][settings][claude-sandbox]") {
  const std::string texts[] = {
      "{}\n",
      "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]}\n}\n",
      "{\n  \"sandbox\": {\n    \"enabled\": true\n  }\n}\n",
      "{\"sandbox\": {\"enabled\": true, \"network\": {\"allowedDomains\": [\"example.org\"]}}}",
      "{\n\t\"sandbox\": {\n\t\t\"network\": {}\n\t}\n}\n",
  };
  for (const std::string& original : texts) {
    INFO(original);
    std::string added = with_all_unix_sockets(original);
    Json value = JsonText(added).value();
    CHECK(value["sandbox"]["network"]["allowAllUnixSockets"] == true);
    Json before = JsonText(original).value();
    value["sandbox"]["network"].erase("allowAllUnixSockets");
    if (before.contains("sandbox")) {
      if (!before["sandbox"].contains("network")) {
        value["sandbox"].erase("network");
      }
      CHECK(value == before);
    }
    CHECK(with_all_unix_sockets(added) == added);
    std::string removed = without_all_unix_sockets(added);
    if (original.find("\"network\": {}") == std::string::npos) {
      CHECK(removed == original);
    }
    CHECK(without_all_unix_sockets(removed) == removed);
  }
}

TEST_CASE("a value the user set for allowAllUnixSockets is never changed by the install",
          "[install][settings][claude-sandbox]") {
  for (const char* setting : {"true", "false"}) {
    std::string text = std::string(
                           "{\"sandbox\": {\"enabled\": true, \"network\": "
                           "{\"allowAllUnixSockets\": ") +
                       setting + "}}}";
    CHECK(with_all_unix_sockets(text) == text);
  }
  CHECK_THROWS_AS(with_all_unix_sockets("{\"sandbox\": true}"), JsonTextError);
  CHECK_THROWS_AS(with_all_unix_sockets("{\"sandbox\": {\"network\": []}}"), JsonTextError);
}

TEST_CASE("Claude Code's sandbox as its settings files set it: the last file that sets a key wins",
          "[install][settings][claude-sandbox]") {
  ClaudeSandbox none = claude_sandbox({{"user", ""}, {"project", "{}"}, {"local", "not json"}});
  CHECK_FALSE(none.enabled);
  CHECK_FALSE(none.all_unix_sockets);

  ClaudeSandbox on = claude_sandbox(
      {{"user", R"({"sandbox": {"enabled": true, "network": {"allowAllUnixSockets": false}}})"},
       {"project", R"({"sandbox": {"network": {"allowAllUnixSockets": true}}})"},
       {"local", R"({"permissions": {}})"}});
  CHECK(on.enabled);
  CHECK(on.enabled_in == "user");
  CHECK(on.all_unix_sockets == true);
  CHECK(on.all_unix_sockets_in == "project");

  ClaudeSandbox off = claude_sandbox({{"user", R"({"sandbox": {"enabled": true}})"},
                                      {"managed", R"({"sandbox": {"enabled": false}})"}});
  CHECK_FALSE(off.enabled);
  CHECK(off.enabled_in == "managed");
  // allowUnixSockets (paths) is macOS only: it allows nothing on Linux.
  CHECK_FALSE(claude_sandbox({{"user", R"({"sandbox": {"enabled": true, "network": )"
                                       R"({"allowUnixSockets": ["/run/sandshim/broker.sock"]}}})"}})
                  .all_unix_sockets);
}
