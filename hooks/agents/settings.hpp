#pragma once

// Where an agent keeps its hooks and what sandshim adds there: data each agent's descriptor
// (hooks/agents/<agent>.cpp) gives, which `sandshim install agent` (install/) merges and doctor
// checks. The pieces every agent's settings are built from are here too.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandshim::hooks {

// How an agent's config lists hook handlers under each event.
enum class Layout {
  grouped,  // event -> [{matcher, hooks: [handler]}] (Claude Code, Codex, Gemini CLI)
  flat,     // event -> [handler] (Cursor, Windsurf)
};

// One hook sandshim registers: the item it appends under `event`, with "command" filled in.
struct HookEntry {
  std::string event;
  nlohmann::ordered_json item;
};

// How `install agent` wires the agent: `path` (its commands run on the host with the shims
// first) or `wrap` (Claude Code's own shell runs every command in the wrap image).
enum class InstallMode { path, wrap };

// Where an agent keeps its hooks and what sandshim adds there.
struct AgentSettings {
  std::string name;     // the `--agent` value: claude, codex, cursor, gemini, windsurf
  std::string display;  // Claude Code, Codex, …
  std::filesystem::path project_file;  // relative to the project root
  std::filesystem::path user_file;     // absolute
  Layout layout = Layout::grouped;
  std::vector<HookEntry> entries;
  nlohmann::ordered_json skeleton;      // a new file before sandshim's hooks: {} or {"version": 1}
  std::vector<std::string> next_steps;  // what the user has to approve in the agent
  // Claude Code wrap mode: CLAUDE_CODE_SHELL_PREFIX in the settings' "env", and handlers in
  // exec form (`/bin/sh -c …`), which Claude Code runs without that prefix, on the host.
  bool sandbox_shell = false;
  // Where the agent reads settings its user cannot change (root's, for fleets), as the installed
  // CLIs name them; empty: none sandshim writes (`install agent NAME --managed`).
  std::filesystem::path managed_file{};
  // The top-level key of that file that makes only its hooks run ("" when the agent has none).
  std::string managed_only_key{};
};

namespace settings {

using Json = nlohmann::ordered_json;

// Well above the hook's own 20-second deadline, so the hook always answers (or refuses)
// before the agent's timeout, which the agents treat as no objection, can fire.
inline constexpr int k_timeout_seconds = 60;

// A matcher group; an empty matcher is left out (every source of SessionStart).
Json group(const std::string& matcher, Json handler);
// {"type": "command", "command": "", "timeout": …} with `extras` added.
Json command_handler(int timeout, Json extras = Json::object());
// Exec form: `/bin/sh -c ""` in command and args, the script filled in by the install.
Json exec_form(Json handler);

}  // namespace settings

}  // namespace sandshim::hooks
