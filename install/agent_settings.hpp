#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hooks/agents/settings.hpp"

namespace sandshim::install {

// Each agent's settings come from its descriptor (hooks/agents/<agent>.cpp).
using hooks::AgentSettings;
using hooks::HookEntry;
using hooks::InstallMode;
using hooks::Layout;

// Where the agent reads settings its user cannot change (root's, for fleets), as the installed
// CLIs name them; empty: none sandshim writes (`install agent NAME --managed`).
std::filesystem::path managed_settings_file(const AgentSettings& settings);
// The top-level key of that file that makes only its hooks run ("" when the agent has none).
std::string managed_only_key(const AgentSettings& settings);

// Every agent of the registry (hooks/agents/registry.cpp), in its order.
std::vector<AgentSettings> all_agent_settings();
std::optional<AgentSettings> agent_settings_named(std::string_view name,
                                                  InstallMode mode = InstallMode::path);

enum class Change { created, updated, unchanged, removed, deleted, absent };
std::string to_string(Change change);

struct Merged {
  std::string text;  // the new file
  Change change;
  bool only_skeleton_left = false;  // uninstall left {} (or Cursor's {"version": 1})
};

// Adds sandshim's entries to a settings file (nullopt: it does not exist yet), keeping every
// other byte. Idempotent: entries already there are left alone, or get the new binary path.
// `sandshim`: the binary the shell prefix names (wrap mode), whose entry a path install removes.
// Throws JsonTextError when the file is not strict JSON or its hooks are not in the agent's
// format: it is never overwritten then.
Merged merge_hooks(const std::optional<std::string>& text, const AgentSettings& settings,
                   const std::string& hook_command, const std::filesystem::path& sandshim = {});

// Removes exactly the handlers sandshim added (a group or event it emptied goes too). Whether
// a file left as the bare skeleton is deleted is the caller's call: only if sandshim made it.
Merged unmerge_hooks(const std::optional<std::string>& text, const AgentSettings& settings);

// The shell text a handler runs: its `command`, or SCRIPT of an exec-form `/bin/sh -c SCRIPT`.
std::optional<std::string> handler_script(const nlohmann::ordered_json& handler);

// True when the file holds a sandshim handler for this agent.
bool has_sandshim_hooks(const std::string& text, const AgentSettings& settings);

// `text` with the agent's managed-only key set (Claude Code's allowManagedHooksOnly): only the
// hooks of the managed file run then, none the user or a project adds.
std::string with_managed_only(const std::string& text, const AgentSettings& settings);

// The settings' CLAUDE_CODE_SHELL_PREFIX ("" when none): Claude Code's shell in wrap mode.
std::string claude_shell_prefix_in(const std::string& text);

// Claude Code's own sandbox (bubblewrap and a seccomp filter on Linux) as its settings files set
// it. On Linux its filter refuses every AF_UNIX socket, the broker's included, unless
// sandbox.network.allowAllUnixSockets is true: allowUnixSockets (paths) is macOS only, ignored on
// Linux, where seccomp cannot filter by path (Claude Code 2.1.332, tested with the real CLI).
struct ClaudeSettingsSource {
  std::string name;  // the file, for messages
  std::string text;  // its content ("" when absent)
};
struct ClaudeSandbox {
  bool enabled = false;
  std::string enabled_in;                // the file whose sandbox.enabled decided
  std::optional<bool> all_unix_sockets;  // sandbox.network.allowAllUnixSockets, when set
  std::string all_unix_sockets_in;       // the file that set it
};
// Sources lowest precedence first (user, project, local, managed): the last that sets a key wins.
ClaudeSandbox claude_sandbox(const std::vector<ClaudeSettingsSource>& sources);

// The key sandshim adds so that Claude Code's sandboxed commands reach the broker's socket.
inline constexpr const char* k_claude_all_unix_sockets = "sandbox.network.allowAllUnixSockets";
// `text` with sandbox.network.allowAllUnixSockets = true added; a value already there (the
// user's own true or false) is left alone. Throws JsonTextError like merge_hooks.
std::string with_all_unix_sockets(const std::string& text);
// `text` without sandbox.network.allowAllUnixSockets (network and sandbox go when emptied).
std::string without_all_unix_sockets(const std::string& text);

// `'/usr/local/bin/sandshim' hook --agent claude …`: a handler sandshim wrote, wherever the
// binary lived then (a binary named sandshim*, or this very binary).
bool is_sandshim_hook_command(const std::string& command, std::string_view agent);

// The hook command written into settings: the absolute path of this binary, shell-quoted.
std::string hook_command_for(const std::filesystem::path& sandshim, std::string_view agent);

}  // namespace sandshim::install
