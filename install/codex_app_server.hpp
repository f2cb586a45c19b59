#pragma once

// Codex's own answer to "which hooks will you run here, and are they trusted": `codex
// app-server` (JSON-RPC, one JSON object per line on stdio), method `hooks/list`. Codex keeps
// trust per hook hash in its config; only Codex can compute that hash, so doctor asks it.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sandshim::install {

// One hook as `hooks/list` reports it (Codex 0.171: HooksListResponse → HookMetadata).
struct CodexHook {
  std::string key;           // "<sourcePath>:<event_label>:<group>:<handler>"
  std::string event_name;    // preToolUse, postToolUse…
  std::string command;       // the handler's command
  std::string trust_status;  // managed, untrusted, trusted, modified
  std::string current_hash;  // "sha256:…", what a trusted_hash must equal
  bool enabled = true;
};

struct CodexHookList {
  std::optional<std::string> problem;  // why Codex could not be asked; nothing else is set then
  std::vector<CodexHook> hooks;
  std::vector<std::string> warnings;  // configWarning summaries and the entry's warnings/errors
};

// The `codex` a user would run: the first on PATH.
std::optional<std::filesystem::path> find_codex(const std::string& path_variable);

// Asks `codex app-server` for the hooks Codex would run in `cwd`; gives up after `timeout`.
CodexHookList list_codex_hooks(const std::filesystem::path& codex, const std::filesystem::path& cwd,
                               std::chrono::milliseconds timeout);

// The answer to `hooks/list` read from the server's output lines (exposed for tests).
CodexHookList parse_codex_hook_list(const std::vector<std::string>& lines);

}  // namespace sandshim::install
