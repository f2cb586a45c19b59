#pragma once

// Whether an installed agent will really call sandshim's hooks: each agent has its own ways of
// holding hooks back (Codex: project trust and a review per hook; Gemini CLI: trusted folders;
// Claude Code: disableAllHooks and managed-only hooks). `sandshim doctor` reports these.

#include <filesystem>
#include <functional>
#include <string>

#include "install/agent_settings.hpp"
#include "install/codex_app_server.hpp"

namespace sandshim::install {

// Where the agents keep what decides whether hooks run, and how Codex is asked; from the
// environment by default.
struct AgentConfigPaths {
  std::filesystem::path claude_dir;              // CLAUDE_CONFIG_DIR or ~/.claude
  std::filesystem::path claude_managed_dir;      // /etc/claude-code
  std::filesystem::path codex_home;              // CODEX_HOME or ~/.codex
  std::filesystem::path gemini_dir;              // ~/.gemini
  std::filesystem::path gemini_trusted_folders;  // GEMINI_CLI_TRUSTED_FOLDERS_PATH or …
  bool gemini_trust_workspace_env = false;       // GEMINI_CLI_TRUST_WORKSPACE=true
  std::filesystem::path workspace;               // where a user install is asked about
  // Codex's own list of the hooks it runs in a directory (`codex app-server`, codex on PATH).
  std::function<CodexHookList(const std::filesystem::path& cwd)> list_codex_hooks;

  static AgentConfigPaths from_environment();
};

struct HookCallCheck {
  bool will_run = false;
  std::string detail;  // one line: what was found
  std::string fix;     // the exact step, when it will not run
};

// Checks one installed settings file: `project_root` is empty for a user install.
HookCallCheck check_hook_will_run(const AgentSettings& settings,
                                  const std::filesystem::path& settings_file,
                                  const std::filesystem::path& project_root,
                                  const AgentConfigPaths& paths);

}  // namespace sandshim::install
