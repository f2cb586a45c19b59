#include <catch2/catch.hpp>

#include "install/agent_settings.hpp"
#include "install/hook_checks.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::install;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

namespace {

// A project with the agent's hooks installed, and the agent's own config directories, all in
// one temporary directory. The hook binary is an executable named sandshim.
struct Installed {
  TempDir dir;
  fs::path project = dir / "project";
  AgentConfigPaths paths;
  AgentSettings settings;
  fs::path file;

  explicit Installed(const std::string& agent) : settings(*agent_settings_named(agent)) {
    paths.claude_dir = dir / "claude";
    paths.claude_managed_dir = dir / "etc-claude-code";
    paths.codex_home = dir / "codex";
    paths.gemini_dir = dir / "gemini";
    paths.gemini_trusted_folders = dir / "gemini" / "trustedFolders.json";
    file = project / settings.project_file;
    fs::path binary = dir / "bin" / "sandshim";
    write_text(binary, "#!/bin/sh\n");
    fs::permissions(binary, fs::perms::owner_all);
    write_text(file, merge_hooks(std::nullopt, settings, hook_command_for(binary, agent)).text);
  }

  HookCallCheck check() const { return check_hook_will_run(settings, file, project, paths); }
};

}  // namespace

TEST_CASE("doctor: Claude Code's hooks run unless disableAllHooks or managed-only hooks say no",
          "[install][doctor]") {
  Installed claude("claude");
  CHECK(claude.check().will_run);
  write_text(claude.project / ".claude/settings.local.json", R"({"disableAllHooks": true})");
  HookCallCheck disabled = claude.check();
  CHECK_FALSE(disabled.will_run);
  CHECK(disabled.detail.find("disableAllHooks") != std::string::npos);
  CHECK(disabled.fix.find("settings.local.json") != std::string::npos);

  fs::remove(claude.project / ".claude/settings.local.json");
  write_text(claude.paths.claude_managed_dir / "managed-settings.json",
             R"({"allowManagedHooksOnly": true})");
  HookCallCheck managed = claude.check();
  CHECK_FALSE(managed.will_run);
  CHECK(managed.detail.find("allowManagedHooksOnly") != std::string::npos);
}

TEST_CASE("doctor: a hook binary that is gone blocks every command, and says so",
          "[install][doctor]") {
  Installed claude("claude");
  write_text(claude.file, merge_hooks(std::nullopt, claude.settings,
                                      hook_command_for(claude.dir / "gone/sandshim", "claude"))
                              .text);
  HookCallCheck gone = claude.check();
  CHECK_FALSE(gone.will_run);
  CHECK(gone.fix == "`sandshim install agent claude` again");
}

TEST_CASE("doctor: Codex needs the project trusted and each hook reviewed", "[install][doctor]") {
  Installed codex("codex");
  HookCallCheck untrusted = codex.check();
  CHECK_FALSE(untrusted.will_run);
  CHECK(untrusted.detail.find("not a trusted project") != std::string::npos);
  CHECK(untrusted.fix.find("codex exec --trust") != std::string::npos);

  std::string trust = "[projects.\"" + codex.project.string() + "\"]\ntrust_level = \"trusted\"\n";
  write_text(codex.paths.codex_home / "config.toml", trust);
  HookCallCheck unreviewed = codex.check();
  CHECK_FALSE(unreviewed.will_run);
  CHECK(unreviewed.detail.find("PreToolUse hook is not reviewed") != std::string::npos);
  CHECK(unreviewed.fix.find("--dangerously-bypass-hook-trust") != std::string::npos);

  std::string hooks = codex.file.string();
  write_text(codex.paths.codex_home / "config.toml",
             trust + "\n[hooks.state.\"" + hooks + ":pre_tool_use:0:0\"]\n" +
                 "trusted_hash = \"sha256:aa\"\n\n[hooks.state.\"" + hooks +
                 ":post_tool_use:0:0\"]\ntrusted_hash = \"sha256:bb\"\n");
  CHECK(codex.check().will_run);
}

TEST_CASE("doctor: Gemini CLI needs a trusted folder and hooks enabled", "[install][doctor]") {
  Installed gemini("gemini");
  HookCallCheck untrusted = gemini.check();
  CHECK_FALSE(untrusted.will_run);
  CHECK(untrusted.fix.find("TRUST_FOLDER") != std::string::npos);

  write_text(gemini.paths.gemini_trusted_folders,
             "{\"" + gemini.dir.path().string() + "\": \"TRUST_FOLDER\"}");
  CHECK(gemini.check().will_run);
  write_text(gemini.paths.gemini_trusted_folders,
             "{\"" + (gemini.project / "sub").string() + "\": \"TRUST_PARENT\"}");
  CHECK(gemini.check().will_run);
  write_text(gemini.paths.gemini_trusted_folders,
             "{\"" + gemini.project.string() + "\": \"DO_NOT_TRUST\"}");
  CHECK_FALSE(gemini.check().will_run);

  gemini.paths.gemini_trust_workspace_env = true;
  CHECK(gemini.check().will_run);
  write_text(gemini.paths.gemini_dir / "settings.json", R"({"hooksConfig": {"enabled": false}})");
  CHECK_FALSE(gemini.check().will_run);
}
