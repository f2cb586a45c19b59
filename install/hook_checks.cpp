#include "install/hook_checks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/environment.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/shell_parser.hpp"
#include "install/atomic_file.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// Codex's app-server starts in about 1.5 s on an idle machine; a loaded one needs more.
constexpr std::chrono::milliseconds k_codex_answer_timeout{15000};

Json json_file(const fs::path& file) {
  std::optional<std::string> text = read_file(file);
  return text ? Json::parse(*text, nullptr, false, true) : Json();
}

HookCallCheck runs(std::string detail) {
  return {true, std::move(detail), ""};
}

HookCallCheck blocked(std::string detail, std::string fix) {
  return {false, std::move(detail), std::move(fix)};
}

// Every sandshim handler of the file as (event, group index, handler index, command).
struct OurHandler {
  std::string event;
  size_t group = 0;
  size_t handler = 0;
  std::string command;
  bool exec_form = false;  // `/bin/sh -c COMMAND`, which Claude Code runs without its shell prefix
};

std::vector<OurHandler> our_handlers(const Json& settings_json, const AgentSettings& settings) {
  std::vector<OurHandler> found;
  if (!settings_json.is_object() || !settings_json.contains("hooks") ||
      !settings_json["hooks"].is_object()) {
    return found;
  }
  for (const auto& [event, groups] : settings_json["hooks"].items()) {
    for (size_t g = 0; groups.is_array() && g < groups.size(); ++g) {
      const Json& hooks = groups[g].is_object() ? groups[g].value("hooks", Json()) : Json();
      for (size_t h = 0; hooks.is_array() && h < hooks.size(); ++h) {
        std::optional<std::string> command = handler_script(hooks[h]);
        if (command && is_sandshim_hook_command(*command, settings.name)) {
          found.push_back({event, g, h, *command, hooks[h].contains("args")});
        }
      }
    }
  }
  return found;
}

std::string hook_binary(const OurHandler& handler) {
  hooks::ShellParse parse =
      hooks::parse_shell(handler.command.substr(0, handler.command.find(" || ")));
  if (parse.error || parse.commands.empty() || parse.commands.front().words.empty()) {
    return "";
  }
  return parse.commands.front().words.front().value;
}

// The binary a hook command starts: a moved or deleted sandshim blocks every command.
std::optional<std::string> missing_binary(const std::vector<OurHandler>& handlers) {
  for (const OurHandler& handler : handlers) {
    std::string binary = hook_binary(handler);
    if (!binary.empty() && ::access(binary.c_str(), X_OK) != 0) {
      return binary;
    }
  }
  return std::nullopt;
}

std::optional<std::string> disabling_file(const std::vector<fs::path>& files, const char* key) {
  for (const fs::path& file : files) {
    Json value = json_file(file);
    if (value.is_object() && value.contains(key) && value[key] == true) {
      return file.string();
    }
  }
  return std::nullopt;
}

// Wrap mode (`install agent claude --mode wrap`): the settings' CLAUDE_CODE_SHELL_PREFIX must be
// `<the hook's sandshim> -c`, and the hooks in exec form, which Claude Code runs on the host
// (a shell-form hook would go through the prefix into the sandbox, where sandshim is not).
std::optional<HookCallCheck> claude_shell_problem(const fs::path& settings_file,
                                                  const std::vector<OurHandler>& ours) {
  std::string prefix = claude_shell_prefix_in(read_file(settings_file).value_or(""));
  bool wrap = std::any_of(ours.begin(), ours.end(), [](const auto& h) { return h.exec_form; });
  std::string fix = "`sandshim install agent claude --mode wrap` again (or without --mode wrap)";
  if (!wrap && prefix.empty()) {
    return std::nullopt;
  }
  if (!wrap) {
    return blocked("Claude Code: CLAUDE_CODE_SHELL_PREFIX " + quoted(prefix) + " in " +
                       settings_file.string() +
                       " also runs sandshim's shell-form hooks, away from the host",
                   fix);
  }
  for (const OurHandler& handler : ours) {
    if (!hooks::is_sandbox_shell_prefix(prefix, hook_binary(handler))) {
      return blocked("Claude Code: wrap mode, but CLAUDE_CODE_SHELL_PREFIX in " +
                         settings_file.string() + " is " +
                         (prefix.empty() ? "not set" : quoted(prefix)) + ", not `" +
                         hooks::sandbox_shell_prefix(hook_binary(handler)) +
                         "`: Bash commands would run on the host, so the hook refuses them",
                     fix);
    }
  }
  return std::nullopt;
}

// The handler sandshim installs under `event` for this group, when it is in `groups`.
const Json* matching_group(const Json& groups, const Json& handler) {
  if (!groups.is_array()) {
    return nullptr;
  }
  for (const Json& group : groups) {
    const Json* hooks = group.is_object() && group.contains("hooks") ? &group["hooks"] : nullptr;
    if (hooks != nullptr && hooks->is_array() &&
        std::find(hooks->begin(), hooks->end(), handler) != hooks->end()) {
      return &group;
    }
  }
  return nullptr;
}

// The hooks sandshim would install in place of `ours`: the same binary, the same mode.
Json expected_hooks(const AgentSettings& settings, const std::vector<OurHandler>& ours) {
  bool wrap = std::any_of(ours.begin(), ours.end(), [](const auto& h) { return h.exec_form; });
  std::optional<AgentSettings> expected_settings =
      agent_settings_named(settings.name, wrap ? InstallMode::wrap : InstallMode::path);
  fs::path binary = hook_binary(ours.front());
  std::string command = hook_command_for(binary, settings.name);
  return Json::parse(merge_hooks(std::nullopt, *expected_settings, command, binary).text)["hooks"];
}

// What differs between the file's sandshim hooks and what sandshim would install there (the
// same binary, the same mode): a hook removed, a command, timeout or matcher changed.
std::optional<std::string> tampering(const Json& installed, const AgentSettings& settings,
                                     const std::vector<OurHandler>& ours) {
  if (ours.empty() || settings.layout != Layout::grouped) {
    return std::nullopt;
  }
  Json expected = expected_hooks(settings, ours);
  const Json& hooks = installed["hooks"];
  for (const auto& [event, groups] : expected.items()) {
    for (const Json& group : groups) {
      const Json& handler = group["hooks"][0];
      const Json* found = hooks.contains(event) ? matching_group(hooks[event], handler) : nullptr;
      bool ours_there = std::any_of(ours.begin(), ours.end(),
                                    [&, e = event](const auto& h) { return h.event == e; });
      if (found == nullptr) {
        return ours_there ? "its " + event + " hook is not the one sandshim installs (its " +
                                "command or settings were changed)"
                          : "its " + event + " hook was removed";
      }
      Json matcher = group.value("matcher", Json());
      if (found->value("matcher", Json()) != matcher) {
        return "its " + event + " hook's matcher is " + found->value("matcher", Json()).dump() +
               ", not " + matcher.dump();
      }
    }
  }
  return std::nullopt;
}

HookCallCheck check_claude(const AgentSettings& settings, const fs::path& project_root,
                           const AgentConfigPaths& paths) {
  fs::path managed = paths.claude_managed_dir / "managed-settings.json";
  std::vector<fs::path> files = {managed, paths.claude_dir / "settings.json"};
  if (!project_root.empty()) {
    files.push_back(project_root / ".claude" / "settings.json");
    files.push_back(project_root / ".claude" / "settings.local.json");
  }
  if (std::optional<std::string> file = disabling_file(files, "disableAllHooks")) {
    return blocked("Claude Code: disableAllHooks is true in " + *file + ", so no hook runs",
                   "remove \"disableAllHooks\" from " + *file);
  }
  if (disabling_file({managed}, "allowManagedHooksOnly")) {
    if (has_sandshim_hooks(read_file(managed).value_or(""), settings)) {
      return runs("Claude Code calls them (sandshim's managed hooks; only managed hooks run)");
    }
    return blocked("Claude Code: " + managed.string() +
                       " sets allowManagedHooksOnly, so sandshim's hooks never run",
                   "ask the administrator to add sandshim's hooks to " + managed.string());
  }
  return runs("Claude Code calls them (no disableAllHooks, no managed-only hooks)");
}

std::string codex_event_label(const std::string& event) {
  std::string label;
  for (char c : event) {
    if (std::isupper(static_cast<unsigned char>(c)) != 0) {
      label += label.empty() ? "" : "_";
      label += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      label += c;
    }
  }
  return label;
}

// Codex names each handler by its file, event, group and position: the key of its trust.
std::string codex_hook_key(const fs::path& settings_file, const OurHandler& handler) {
  return settings_file.string() + ":" + codex_event_label(handler.event) + ":" +
         std::to_string(handler.group) + ":" + std::to_string(handler.handler);
}

const CodexHook* listed_hook(const CodexHookList& list, const std::string& key) {
  auto found = std::find_if(list.hooks.begin(), list.hooks.end(),
                            [&](const CodexHook& hook) { return hook.key == key; });
  return found == list.hooks.end() ? nullptr : &*found;
}

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

// A TOML basic string: JSON's escapes are TOML's.
std::string toml_string(const std::string& text) {
  return Json(text).dump();
}

// The shell command that appends `lines` to Codex's config: what a review writes, for CI.
std::string append_to_config(const std::vector<std::string>& lines, const fs::path& config) {
  std::string command = "printf '%s\\n'";
  for (const std::string& line : lines) {
    command += " " + shell_quote(line);
  }
  return command + " >> " + shell_quote(config.string());
}

std::vector<std::string> codex_trust_lines(const CodexHook& hook) {
  return {"[hooks.state." + toml_string(hook.key) + "]",
          "trusted_hash = " + toml_string(hook.current_hash)};
}

// Codex lists the hook file's handlers only in a trusted project (it says so in a configWarning).
HookCallCheck codex_not_listed(const fs::path& settings_file, const std::string& key,
                               const CodexHookList& list, const fs::path& project_root,
                               const fs::path& config) {
  if (!project_root.empty() && mentions(list.warnings, settings_file.parent_path().string())) {
    return blocked("Codex: " + project_root.string() +
                       " is not a trusted project, so Codex ignores its .codex/ and runs "
                       "commands without sandshim",
                   "run `codex` in the project and trust it; in CI: `" +
                       append_to_config({"[projects." + toml_string(project_root.string()) + "]",
                                         "trust_level = \"trusted\""},
                                        config) +
                       "`, then `sandshim doctor` again");
  }
  return blocked("Codex: `codex app-server` does not list sandshim's hook " + quoted(key) +
                     (list.warnings.empty() ? "" : " (" + join(list.warnings, "; ") + ")"),
                 "`sandshim install agent codex` again, then `sandshim doctor`");
}

bool codex_runs(const CodexHook& hook) {
  return hook.trust_status == "trusted" || hook.trust_status == "managed";
}

// For CI, where /hooks cannot be opened: what a review would write to Codex's config. A hook
// never reviewed gets a new table; a changed one has its table already, so its hash is replaced.
std::string codex_ci_trust(const std::vector<const CodexHook*>& hooks, const fs::path& config) {
  std::vector<std::string> new_lines;
  std::vector<std::string> changed;
  for (const CodexHook* hook : hooks) {
    if (codex_runs(*hook)) {
      continue;
    }
    if (hook->trust_status == "modified") {
      changed.push_back("trusted_hash = " + toml_string(hook->current_hash) +
                        " under [hooks.state." + toml_string(hook->key) + "]");
    } else {
      std::vector<std::string> lines = codex_trust_lines(*hook);
      new_lines.insert(new_lines.end(), lines.begin(), lines.end());
    }
  }
  std::vector<std::string> steps;
  if (!new_lines.empty()) {
    steps.push_back("`" + append_to_config(new_lines, config) + "`");
  }
  if (!changed.empty()) {
    steps.push_back("set " + join(changed, " and ") + " in " + config.string());
  }
  return join(steps, "; ");
}

// trusted and managed run; untrusted (never reviewed) and modified (changed since) do not.
std::optional<HookCallCheck> codex_untrusted(const std::vector<const CodexHook*>& hooks,
                                             const fs::path& config) {
  std::vector<std::string> which;
  for (const CodexHook* hook : hooks) {
    if (!hook->enabled) {
      return blocked("Codex: sandshim's hook " + quoted(hook->key) + " is disabled",
                     "enable it in `codex` → /hooks");
    }
    if (!codex_runs(*hook)) {
      which.push_back(
          hook->event_name + " " +
          (hook->trust_status == "modified" ? "changed since its review" : "not reviewed"));
    }
  }
  if (which.empty()) {
    return std::nullopt;
  }
  return blocked("Codex: sandshim's hooks are not trusted (" + join(which, ", ") +
                     "), so Codex runs commands without them",
                 "start `codex`, open /hooks and trust sandshim's hooks; in CI (no /hooks): " +
                     codex_ci_trust(hooks, config));
}

// `[features] hooks = false` (or its old name codex_hooks) in a Codex config.toml: no hook runs.
bool codex_hooks_disabled(const fs::path& config) {
  std::string table;
  for (const std::string& raw : split_lines(read_file(config).value_or(""))) {
    std::string line = trim(raw);
    if (line.starts_with('[')) {
      table = line;
      continue;
    }
    std::string compact;
    std::copy_if(line.begin(), line.end(), std::back_inserter(compact),
                 [](char c) { return c != ' ' && c != '\t'; });
    bool feature = table == "[features]" &&
                   (compact.starts_with("hooks=false") || compact.starts_with("codex_hooks=false"));
    if (feature || compact.starts_with("features.hooks=false") ||
        compact.starts_with("features.codex_hooks=false")) {
      return true;
    }
  }
  return false;
}

// `[features] hooks = false` in the user's, the system's or the project's config.toml.
std::optional<HookCallCheck> codex_hooks_turned_off(const fs::path& config,
                                                    const fs::path& project_root) {
  for (const fs::path& file :
       {config, fs::path("/etc/codex/config.toml"),
        project_root.empty() ? fs::path() : project_root / ".codex/config.toml"}) {
    if (!file.empty() && codex_hooks_disabled(file)) {
      return blocked("Codex: " + file.string() + " sets [features] hooks = false, so no hook runs",
                     "remove that line from " + file.string());
    }
  }
  return std::nullopt;
}

HookCallCheck check_codex(const fs::path& settings_file, const std::vector<OurHandler>& ours,
                          const fs::path& project_root, const AgentConfigPaths& paths) {
  fs::path config = paths.codex_home / "config.toml";
  if (std::optional<HookCallCheck> disabled = codex_hooks_turned_off(config, project_root)) {
    return *disabled;
  }
  fs::path cwd = project_root.empty() ? paths.workspace : project_root;
  CodexHookList list = paths.list_codex_hooks(cwd);
  if (list.problem) {
    return blocked("Codex: cannot ask Codex whether it calls sandshim's hooks: " + *list.problem,
                   "put the `codex` you run on PATH (doctor asks its `codex app-server`), then "
                   "`sandshim doctor` again");
  }
  std::vector<const CodexHook*> listed;
  for (const OurHandler& handler : ours) {
    std::string key = codex_hook_key(settings_file, handler);
    const CodexHook* hook = listed_hook(list, key);
    if (hook == nullptr) {
      return codex_not_listed(settings_file, key, list, project_root, config);
    }
    listed.push_back(hook);
  }
  if (std::optional<HookCallCheck> untrusted = codex_untrusted(listed, config)) {
    return *untrusted;
  }
  return runs(
      "Codex calls them (`codex app-server` lists each as trusted; a changed hook needs a "
      "new review)");
}

// trustedFolders.json: TRUST_FOLDER trusts the folder and below, TRUST_PARENT its parent.
bool gemini_folder_trusted(const fs::path& root, const fs::path& trusted_folders) {
  Json folders = json_file(trusted_folders);
  if (!folders.is_object()) {
    return false;
  }
  for (const auto& [folder, level] : folders.items()) {
    fs::path trusted = folder;
    if (level == "TRUST_PARENT") {
      trusted = trusted.parent_path();
    } else if (level != "TRUST_FOLDER") {
      continue;
    }
    fs::path relative = root.lexically_relative(trusted);
    if (!relative.empty() && relative.begin()->string() != "..") {
      return true;
    }
  }
  return false;
}

// True when the nested member exists and is the boolean false.
bool member_is_false(const Json& root, std::initializer_list<const char*> path) {
  const Json* current = &root;
  for (const char* key : path) {
    if (!current->is_object() || !current->contains(key)) {
      return false;
    }
    current = &(*current)[key];
  }
  return *current == false;
}

HookCallCheck check_gemini(const fs::path& project_root, const AgentConfigPaths& paths) {
  Json user = json_file(paths.gemini_dir / "settings.json");
  if (member_is_false(user, {"hooksConfig", "enabled"})) {
    return blocked("Gemini CLI: hooksConfig.enabled is false in ~/.gemini/settings.json",
                   "set \"hooksConfig\": {\"enabled\": true} there");
  }
  bool trust_off = member_is_false(user, {"security", "folderTrust", "enabled"});
  if (project_root.empty() || trust_off || paths.gemini_trust_workspace_env ||
      gemini_folder_trusted(project_root, paths.gemini_trusted_folders)) {
    return runs("Gemini CLI calls them (the folder is trusted)");
  }
  return blocked("Gemini CLI: " + project_root.string() +
                     " is not a trusted folder, so Gemini CLI ignores .gemini/settings.json "
                     "and its hooks",
                 "run `gemini` in the project and trust the folder (or add \"" +
                     project_root.string() + "\": \"TRUST_FOLDER\" to " +
                     paths.gemini_trusted_folders.string() + ")");
}

// The agent's own directory (its descriptor's), empty when no such agent is registered.
fs::path config_dir_of(std::string_view flag) {
  std::optional<hooks::Agent> agent = hooks::agent_named(flag);
  return agent ? (*agent)->config_dir() : fs::path();
}

}  // namespace

AgentConfigPaths AgentConfigPaths::from_environment() {
  AgentConfigPaths paths;
  paths.claude_dir = config_dir_of("claude");
  paths.claude_managed_dir = "/etc/claude-code";
  paths.codex_home = config_dir_of("codex");
  std::error_code ec;
  paths.workspace = fs::current_path(ec);
  paths.list_codex_hooks = [path_variable = environment::path()](const fs::path& cwd) {
    std::optional<fs::path> codex = find_codex(path_variable);
    if (!codex) {
      return CodexHookList{"`codex` is not on PATH", {}, {}};
    }
    return install::list_codex_hooks(*codex, cwd, k_codex_answer_timeout);
  };
  paths.gemini_dir = config_dir_of("gemini");
  paths.gemini_trusted_folders = environment::absolute("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
                                     .value_or(paths.gemini_dir / "trustedFolders.json");
  paths.gemini_trust_workspace_env = environment::flag("GEMINI_CLI_TRUST_WORKSPACE");
  return paths;
}

HookCallCheck check_hook_will_run(const AgentSettings& settings, const fs::path& settings_file,
                                  const fs::path& project_root, const AgentConfigPaths& paths) {
  Json installed = json_file(settings_file);
  std::vector<OurHandler> ours = our_handlers(installed, settings);
  if (std::optional<std::string> binary = missing_binary(ours)) {
    return blocked(settings.display + ": the hook command runs " + quoted(*binary) +
                       ", which is not an executable file: every command is blocked",
                   "`sandshim install agent " + settings.name + "` again");
  }
  if (std::optional<std::string> change = tampering(installed, settings, ours)) {
    return blocked(settings.display + ": " + settings_file.string() +
                       " does not hold what sandshim installs: " + *change,
                   "look at who changed it, then `sandshim install agent " + settings.name +
                       "` again (with the same --user, --project or --managed)");
  }
  if (settings.name == "claude") {
    if (std::optional<HookCallCheck> problem = claude_shell_problem(settings_file, ours)) {
      return *problem;
    }
    return check_claude(settings, project_root, paths);
  }
  if (settings.name == "codex") {
    return check_codex(settings_file, ours, project_root, paths);
  }
  if (settings.name == "gemini") {
    return check_gemini(project_root, paths);
  }
  return runs(settings.display + ": installed (trust is not checked for this agent)");
}

}  // namespace sandshim::install
