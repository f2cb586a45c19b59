#include <catch2/catch.hpp>

#include "install/agent_settings.hpp"
#include "install/atomic_file.hpp"
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

TEST_CASE(
    "doctor: a hook event taken out of the settings, or its matcher changed, fails and "
    "names the file",
    "[install][doctor]") {
  // (Codex's and Gemini CLI's trust checks come after this one: not reached here.)
  for (const char* agent : {"claude", "codex", "gemini"}) {
    Installed installed(agent);
    const std::string original = *read_file(installed.file);
    const std::string pre = std::string(agent) == "gemini" ? "BeforeTool" : "PreToolUse";
    auto settings = nlohmann::ordered_json::parse(original);
    settings["hooks"].erase(pre);
    write_text(installed.file, settings.dump(2));
    HookCallCheck removed = installed.check();
    CHECK_FALSE(removed.will_run);
    CHECK(removed.detail.find("its " + pre + " hook was removed") != std::string::npos);
    CHECK(removed.detail.find(installed.file.string()) != std::string::npos);

    settings = nlohmann::ordered_json::parse(original);
    settings["hooks"][pre][0]["matcher"] = "NoSuchTool";
    write_text(installed.file, settings.dump(2));
    HookCallCheck changed = installed.check();
    CHECK_FALSE(changed.will_run);
    CHECK(changed.detail.find("its " + pre + " hook's matcher is \"NoSuchTool\"") !=
          std::string::npos);
    CHECK(changed.detail.find(installed.file.string()) != std::string::npos);
  }
  Installed claude("claude");
  CHECK(claude.check().will_run);
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

// What `codex app-server` answers for the installed project: each of sandshim's two hooks with
// TRUST, or (untrusted project) no hooks and the configWarning Codex sends.
CodexHookList codex_answer(const fs::path& hooks_file, const std::string& trust) {
  CodexHookList list;
  if (trust.empty()) {
    list.warnings.push_back(
        "Project-local config, hooks, and exec policies are disabled in the "
        "following folders until the project is trusted\n    1. " +
        hooks_file.parent_path().string() + "\n");
    return list;
  }
  list.hooks = {
      {hooks_file.string() + ":pre_tool_use:0:0", "preToolUse", "", trust, "sha256:aa"},
      {hooks_file.string() + ":post_tool_use:0:0", "postToolUse", "", "trusted", "sha256:bb"}};
  return list;
}

TEST_CASE("doctor: Codex's app-server must list each hook as trusted", "[install][doctor]") {
  Installed codex("codex");
  std::string trust;
  codex.paths.list_codex_hooks = [&](const fs::path& cwd) {
    CHECK(cwd == codex.project);
    return codex_answer(codex.file, trust);
  };
  HookCallCheck untrusted_project = codex.check();
  CHECK_FALSE(untrusted_project.will_run);
  CHECK(untrusted_project.detail.find("not a trusted project") != std::string::npos);
  CHECK(untrusted_project.fix.find("trust_level = \"trusted\"") != std::string::npos);

  trust = "untrusted";
  HookCallCheck unreviewed = codex.check();
  CHECK_FALSE(unreviewed.will_run);
  CHECK(unreviewed.detail.find("preToolUse not reviewed") != std::string::npos);
  CHECK(unreviewed.fix.find("printf '%s\\n' '[hooks.state.\"" + codex.file.string() +
                            ":pre_tool_use:0:0\"]' 'trusted_hash = \"sha256:aa\"' >> " +
                            (codex.paths.codex_home / "config.toml").string()) !=
        std::string::npos);
  CHECK(unreviewed.fix.find("sha256:bb") == std::string::npos);

  trust = "modified";
  HookCallCheck changed = codex.check();
  CHECK(changed.detail.find("preToolUse changed since its review") != std::string::npos);
  CHECK(changed.fix.find("set trusted_hash = \"sha256:aa\" under [hooks.state.\"" +
                         codex.file.string() + ":pre_tool_use:0:0\"] in ") != std::string::npos);
  trust = "trusted";
  CHECK(codex.check().will_run);

  codex.paths.list_codex_hooks = [](const fs::path&) {
    return CodexHookList{"`codex` is not on PATH", {}, {}};
  };
  HookCallCheck not_asked = codex.check();
  CHECK_FALSE(not_asked.will_run);
  CHECK(not_asked.detail ==
        "Codex: cannot ask Codex whether it calls sandshim's hooks: `codex` is not on PATH");
}

TEST_CASE("doctor: the app-server's hooks/list answer is read with its warnings",
          "[install][doctor]") {
  CodexHookList list = parse_codex_hook_list(
      {R"({"id":1,"result":{"userAgent":"x"}})",
       R"({"method":"configWarning","params":{"summary":"not trusted: /p/.codex"}})",
       R"({"id":2,"result":{"data":[{"cwd":"/p","hooks":[{"key":"/p/.codex/hooks.json:pre_tool_use:0:0",)"
       R"("eventName":"preToolUse","command":"c","trustStatus":"modified","currentHash":"sha256:cc",)"
       R"("enabled":true}],"warnings":["w"],"errors":[{"path":"/p/x","message":"bad"}]}]}})"});
  REQUIRE_FALSE(list.problem);
  REQUIRE(list.hooks.size() == 1);
  CHECK(list.hooks[0].trust_status == "modified");
  CHECK(list.hooks[0].current_hash == "sha256:cc");
  CHECK(list.warnings == std::vector<std::string>{"not trusted: /p/.codex", "w", "/p/x: bad"});
  CHECK(parse_codex_hook_list({R"({"id":2,"error":{"message":"unknown method"}})"}).problem ==
        "hooks/list failed: unknown method");
  CHECK(parse_codex_hook_list({"not json"}).problem == "no answer to hooks/list");
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

TEST_CASE("doctor: a settings file whose sandshim hooks were changed is named, with the change",
          "[install][doctor]") {
  Installed claude("claude");
  std::string original = sandshim::testing::read_text(claude.file);
  auto tampered = [&](const std::string& from, const std::string& to) {
    std::string text = original;
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    write_text(claude.file, text.replace(at, from.size(), to));
    return claude.check();
  };
  HookCallCheck narrowed = tampered("\"Bash|Write", "\"Write");
  CHECK_FALSE(narrowed.will_run);
  CHECK(narrowed.detail.find(claude.file.string() + " does not hold what sandshim installs: its "
                                                    "PreToolUse hook's matcher is \"Write|") !=
        std::string::npos);
  CHECK(narrowed.fix.find("`sandshim install agent claude` again") != std::string::npos);
  HookCallCheck removed = tampered("\"PostToolUseFailure\"", "\"Unrelated\"");
  CHECK(removed.detail.find("its PostToolUseFailure hook was removed") != std::string::npos);
  HookCallCheck changed = tampered("\"timeout\": 60", "\"timeout\": 1");
  CHECK(changed.detail.find("is not the one sandshim installs") != std::string::npos);
  write_text(claude.file, original);
  CHECK(claude.check().will_run);
}

TEST_CASE("doctor: sandshim's own managed hooks run under allowManagedHooksOnly",
          "[install][doctor]") {
  Installed claude("claude");
  fs::path managed = claude.paths.claude_managed_dir / "managed-settings.json";
  write_text(managed,
             with_managed_only(sandshim::testing::read_text(claude.file), claude.settings));
  CHECK(claude.check().will_run);
  HookCallCheck in_managed = check_hook_will_run(claude.settings, managed, {}, claude.paths);
  CHECK(in_managed.will_run);
  CHECK(in_managed.detail.find("only managed hooks run") != std::string::npos);
}

TEST_CASE("doctor: Codex's [features] hooks = false stops every hook", "[install][doctor]") {
  Installed codex("codex");
  codex.paths.list_codex_hooks = [](const fs::path&) { return CodexHookList{}; };
  write_text(codex.paths.codex_home / "config.toml", "model = \"x\"\n[features]\nhooks = false\n");
  HookCallCheck off = codex.check();
  CHECK_FALSE(off.will_run);
  CHECK(off.detail.find("sets [features] hooks = false") != std::string::npos);
}
