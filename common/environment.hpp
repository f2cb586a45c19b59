#pragma once

// Every environment variable sandshim reads, one function each, with the rule it is read by:
// the rest of the code calls these, never getenv, so what the environment can steer is this
// list. Rules: `text` (set, any value, maybe empty), `absolute` (only an absolute path counts;
// anything else is as if unset, so a relative value never points into the cwd), `flag`
// (exactly "true").

#include <filesystem>
#include <optional>
#include <string>

namespace sandshim::environment {

// The rules.
std::optional<std::string> text(const char* name);
std::optional<std::filesystem::path> absolute(const char* name);
bool flag(const char* name);

// The caller's PATH ("" when unset): where programs are looked up as the caller would.
std::string path();
// HOME, absolute (else the passwd entry is used).
std::optional<std::filesystem::path> home();
// XDG_<KIND>_HOME for kind "config", "state", "data", absolute.
std::optional<std::filesystem::path> xdg_home(const std::string& kind);

// Claude Code's config directory (CLAUDE_CONFIG_DIR), absolute.
std::optional<std::filesystem::path> claude_config_dir();
// CLAUDE_ENV_FILE, given to Claude Code's SessionStart hook: the session environment to append to.
std::string claude_env_file();
// CLAUDE_CODE_SHELL_PREFIX: the shell prefix Claude Code runs its commands through (wrap mode).
std::string claude_shell_prefix();
// Codex's home (CODEX_HOME), absolute.
std::optional<std::filesystem::path> codex_home();
// GEMINI_CLI_TRUSTED_FOLDERS_PATH, absolute: where Gemini CLI keeps its trusted folders.
std::optional<std::filesystem::path> gemini_trusted_folders_file();
// GEMINI_CLI_TRUST_WORKSPACE=true: Gemini CLI trusts every folder.
bool gemini_trust_workspace();

}  // namespace sandshim::environment
