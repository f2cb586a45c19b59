#pragma once

// Every environment variable sandshim reads, one function each, with the rule it is read by:
// the rest of the code calls these, never getenv, so what the environment can steer is this
// list. Rules: `text` (set, any value, maybe empty), `absolute` (only an absolute path counts;
// anything else is as if unset, so a relative value never points into the cwd), `flag`
// (exactly "true"). tests/lint/environment.sh fails on any other getenv; the in-container launcher
// (inside/, a static program linking none of these libraries) reads its own three variables.

#include <filesystem>
#include <optional>
#include <string>

namespace sandshim::environment {

// The rules. The agents' own variables (CLAUDE_CONFIG_DIR, CODEX_HOME…) are read by these, in
// the agent's descriptor (hooks/agents/<agent>.cpp): common/ knows no agent.
std::optional<std::string> text(const char* name);
std::optional<std::filesystem::path> absolute(const char* name);
bool flag(const char* name);

// The caller's PATH ("" when unset): where programs are looked up as the caller would.
std::string path();
// HOME, absolute (else the passwd entry is used).
std::optional<std::filesystem::path> home();
// XDG_<KIND>_HOME for kind "config", "state", "data", absolute.
std::optional<std::filesystem::path> xdg_home(const std::string& kind);

// NO_COLOR and TERM, as text: whether output may be coloured (common/terminal).
std::optional<std::string> no_color();
std::optional<std::string> term();
// SANDSHIM_LOG: the log level's name (spdlog's), when set.
std::optional<std::string> log_level();
// SANDSHIM_AUDIT_DB, absolute: the audit database in direct mode, for every reader alike.
std::optional<std::filesystem::path> audit_db();
// SANDSHIM_CONFIG: one more user-layer config file; a relative value is taken from the cwd
// now, so every reader (the shim, the broker's client) names the same file.
std::optional<std::filesystem::path> config_file();
// SANDSHIM_AGENT: the agent a hook's rewrite named ("" when unset); only shapes messages.
std::string agent();
// SANDSHIM_BROKER (non-empty text) and SANDSHIM_BROKER_SOCKET (absolute): the client's mode
// and socket, honoured only where the administrator has not required the broker.
std::optional<std::string> broker_mode();
std::optional<std::filesystem::path> broker_socket();
// DOCKER_HOST, as text: the engine endpoint the docker client would use.
std::optional<std::string> docker_host();
// ZDOTDIR, absolute: where zsh reads the user's start-up files instead of HOME.
std::optional<std::filesystem::path> zdotdir();
// Any variable of the agent's shell, as text: the hook resolves `$NAME` in a write target
// with it, to refuse a write it names (the value steers nothing of sandshim's own).
std::optional<std::string> shell_variable(const std::string& name);

}  // namespace sandshim::environment
