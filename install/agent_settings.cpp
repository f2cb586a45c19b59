#include "install/agent_settings.hpp"

#include <cstdlib>
#include <ranges>

#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/shell_parser.hpp"
#include "install/json_text.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr int k_timeout_seconds = 30;

fs::path env_dir_or(const char* variable, const fs::path& fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && value[0] == '/' ? fs::path(value) : fallback;
}

Json group(const std::string& matcher, Json handler) {
  return Json{{"matcher", matcher}, {"hooks", Json::array({std::move(handler)})}};
}

Json command_handler(int timeout, Json extras = Json::object()) {
  Json handler{{"type", "command"}, {"command", ""}, {"timeout", timeout}};
  handler.update(extras);
  return handler;
}

AgentSettings claude() {
  Json pre = command_handler(
      k_timeout_seconds,
      {{"onFailure", "block"}, {"statusMessage", "sandshim: checking the command"}});
  return {"claude",
          "Claude Code",
          ".claude/settings.json",
          env_dir_or("CLAUDE_CONFIG_DIR", home_directory() / ".claude") / "settings.json",
          Layout::grouped,
          {{"PreToolUse", group("Bash", pre)},
           {"PostToolUse", group("Bash", command_handler(k_timeout_seconds))},
           {"PostToolUseFailure", group("Bash", command_handler(k_timeout_seconds))}},
          Json::object(),
          {"Claude Code runs hooks from settings files only in trusted folders: open it in the "
           "project and accept the workspace trust dialog (`claude -p` trusts the folder). "
           "`/hooks` lists sandshim's entries.",
           "A rewritten command is shown for approval unless the session runs with "
           "--permission-mode bypassPermissions; add `--rewrite-approval allow` to the hook "
           "command to approve rewrites without a prompt.",
           "If Claude Code's own sandbox is on (\"sandbox\": {\"enabled\": true}), it blocks the "
           "Docker socket the shims use: sandboxed interpreters then fail with exit code 125."}};
}

AgentSettings codex() {
  Json pre =
      command_handler(k_timeout_seconds, {{"statusMessage", "sandshim: checking the command"}});
  return {"codex",
          "Codex",
          ".codex/hooks.json",
          env_dir_or("CODEX_HOME", home_directory() / ".codex") / "hooks.json",
          Layout::grouped,
          {{"PreToolUse", group("Bash", pre)},
           {"PostToolUse", group("Bash", command_handler(k_timeout_seconds))}},
          Json::object(),
          {"Codex runs a new or changed command hook only after you review it: start Codex and "
           "trust sandshim's hooks in `/hooks`.",
           "Codex's workspace-write sandbox may keep the shims away from the Docker socket; if "
           "sandboxed interpreters fail with exit code 125, let Codex's sandbox reach it."}};
}

AgentSettings cursor() {
  Json pre{
      {"command", ""}, {"matcher", "Shell"}, {"timeout", k_timeout_seconds}, {"failClosed", true}};
  Json post{{"command", ""}, {"matcher", "Shell"}, {"timeout", k_timeout_seconds}};
  return {"cursor",
          "Cursor",
          ".cursor/hooks.json",
          home_directory() / ".cursor" / "hooks.json",
          Layout::flat,
          {{"preToolUse", pre}, {"postToolUse", post}, {"postToolUseFailure", post}},
          Json{{"version", 1}},
          {"Cursor runs project hooks in trusted workspaces only: open the project in Cursor and "
           "trust it; hooks.json is reloaded by itself.",
           "failClosed is set: a check that crashes or times out blocks the command."}};
}

AgentSettings gemini() {
  Json before{{"name", "sandshim"},
              {"type", "command"},
              {"command", ""},
              {"timeout", k_timeout_seconds * 1000},
              {"description", "Routes interpreters into the sandshim sandbox"}};
  Json after{{"name", "sandshim-audit"},
             {"type", "command"},
             {"command", ""},
             {"timeout", k_timeout_seconds * 1000},
             {"description", "Records the command's outcome in sandshim's audit"}};
  return {"gemini",
          "Gemini CLI",
          ".gemini/settings.json",
          home_directory() / ".gemini" / "settings.json",
          Layout::grouped,
          {{"BeforeTool", group("run_shell_command", before)},
           {"AfterTool", group("run_shell_command", after)}},
          Json::object(),
          {"Gemini CLI fingerprints project hooks: on its next start, trust sandshim's new hooks "
           "when it asks (and keep hooksConfig.enabled on)."}};
}

AgentSettings windsurf() {
  return {"windsurf",
          "Windsurf",
          ".windsurf/hooks.json",
          home_directory() / ".codeium" / "windsurf" / "hooks.json",
          Layout::flat,
          {{"pre_run_command", Json{{"command", ""}, {"show_output", true}}},
           {"post_run_command", Json{{"command", ""}, {"show_output", false}}}},
          Json::object(),
          {"Windsurf cannot rewrite commands: interpreter calls are refused with the command to "
           "run instead (`sandshim run -- …`), unless the shim directory is first on Windsurf's "
           "PATH (start it from a shell after `eval \"$(sandshim env)\"`)."}};
}

// The entry's item with `command` set: in the handler itself, or in a group's only handler.
Json filled(const HookEntry& entry, Layout layout, const std::string& command) {
  Json item = entry.item;
  (layout == Layout::grouped ? item["hooks"][0] : item)["command"] = command;
  return item;
}

bool is_ours(const Json& handler, std::string_view agent) {
  return handler.is_object() && handler.contains("command") && handler["command"].is_string() &&
         is_sandshim_hook_command(handler["command"].get<std::string>(), agent);
}

// Paths (below the event's array) of the command strings of sandshim's handlers.
std::vector<JsonPath> our_commands(const Json& items, const AgentSettings& settings) {
  std::vector<JsonPath> found;
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& item = items[i];
    if (settings.layout == Layout::flat) {
      if (is_ours(item, settings.name)) {
        found.push_back({i, std::string("command")});
      }
      continue;
    }
    if (!item.is_object() || !item.contains("hooks") || !item["hooks"].is_array()) {
      continue;
    }
    for (size_t j = 0; j < item["hooks"].size(); ++j) {
      if (is_ours(item["hooks"][j], settings.name)) {
        found.push_back({i, std::string("hooks"), j, std::string("command")});
      }
    }
  }
  return found;
}

JsonPath joined(JsonPath head, const JsonPath& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

void require_kind(const Json& value, bool ok, const std::string& what) {
  if (!ok) {
    throw JsonTextError(what + " is " + std::string(value.type_name()) +
                        ", not the agent's hook format");
  }
}

Json value_at(const Json& root, const JsonPath& path) {
  const Json* current = &root;
  for (const auto& step : path) {
    current = std::holds_alternative<std::string>(step) ? &current->at(std::get<std::string>(step))
                                                        : &current->at(std::get<size_t>(step));
  }
  return *current;
}

// One event: add the entry, or point an existing one at this binary. True when changed.
bool merge_entry(JsonText& doc, const AgentSettings& settings, const HookEntry& entry,
                 const std::string& command) {
  JsonPath event{std::string("hooks"), entry.event};
  if (!doc.contains(event)) {
    doc.add_member({std::string("hooks")}, entry.event,
                   Json::array({filled(entry, settings.layout, command)}));
    return true;
  }
  Json items = value_at(doc.value(), event);
  require_kind(items, items.is_array(), "hooks." + entry.event);
  std::vector<JsonPath> ours = our_commands(items, settings);
  if (ours.empty()) {
    doc.append_element(event, filled(entry, settings.layout, command));
    return true;
  }
  JsonPath first = joined(event, ours.front());
  if (value_at(doc.value(), first) == command) {
    return false;
  }
  doc.replace(first, command);
  return true;
}

// Removes sandshim's handlers under one event, back to front so indexes stay valid.
bool unmerge_event(JsonText& doc, const AgentSettings& settings, const std::string& event_name) {
  JsonPath event{std::string("hooks"), event_name};
  Json items = value_at(doc.value(), event);
  if (!items.is_array()) {
    return false;
  }
  std::vector<JsonPath> ours = our_commands(items, settings);
  for (const JsonPath& command : std::ranges::reverse_view(ours)) {
    JsonPath handler(command.begin(), command.end() - 1);  // drop "command"
    doc.remove(joined(event, handler));
    if (settings.layout == Layout::grouped) {
      JsonPath group_path = joined(event, {handler.front()});
      if (doc.size(joined(group_path, {std::string("hooks")})) == 0) {
        doc.remove(group_path);
      }
    }
  }
  if (!ours.empty() && doc.size(event) == 0) {
    doc.remove(event);
  }
  return !ours.empty();
}

Json hooks_object(const AgentSettings& settings, const std::string& command) {
  Json hooks = Json::object();
  for (const HookEntry& entry : settings.entries) {
    hooks[entry.event] = Json::array({filled(entry, settings.layout, command)});
  }
  return hooks;
}

}  // namespace

std::vector<AgentSettings> all_agent_settings() {
  return {claude(), codex(), cursor(), gemini(), windsurf()};
}

std::optional<AgentSettings> agent_settings_named(std::string_view name) {
  for (AgentSettings& settings : all_agent_settings()) {
    if (settings.name == name) {
      return settings;
    }
  }
  return std::nullopt;
}

std::string to_string(Change change) {
  switch (change) {
    case Change::created:
      return "created";
    case Change::updated:
      return "updated";
    case Change::unchanged:
      return "unchanged";
    case Change::removed:
      return "removed";
    case Change::deleted:
      return "deleted";
    case Change::absent:
      break;
  }
  return "absent";
}

Merged merge_hooks(const std::optional<std::string>& text, const AgentSettings& settings,
                   const std::string& hook_command) {
  JsonText doc(text.value_or(settings.skeleton.dump(2) + "\n"));
  Json value = doc.value();
  require_kind(value, value.is_object(), "the settings file");
  bool changed = false;
  if (!value.contains("hooks")) {
    doc.add_member({}, "hooks", hooks_object(settings, hook_command));
    changed = true;
  } else {
    require_kind(value["hooks"], value["hooks"].is_object(), "\"hooks\"");
    for (const HookEntry& entry : settings.entries) {
      changed = merge_entry(doc, settings, entry, hook_command) || changed;
    }
  }
  Change change = !text ? Change::created : changed ? Change::updated : Change::unchanged;
  return {doc.text(), change};
}

Merged unmerge_hooks(const std::optional<std::string>& text, const AgentSettings& settings) {
  if (!text) {
    return {"", Change::absent};
  }
  JsonText doc(*text);
  Json value = doc.value();
  if (!value.is_object() || !value.contains("hooks") || !value["hooks"].is_object()) {
    return {*text, Change::unchanged};
  }
  bool removed = false;
  for (const auto& [event, items] : value["hooks"].items()) {
    removed = unmerge_event(doc, settings, event) || removed;
  }
  if (!removed) {
    return {*text, Change::unchanged};
  }
  if (doc.size({std::string("hooks")}) == 0) {
    doc.remove({std::string("hooks")});
  }
  Json left = doc.value();
  return {doc.text(), Change::removed, left.empty() || left == settings.skeleton};
}

bool has_sandshim_hooks(const std::string& text, const AgentSettings& settings) {
  Json value = Json::parse(text, nullptr, false);
  if (!value.is_object() || !value.contains("hooks") || !value["hooks"].is_object()) {
    return false;
  }
  for (const auto& [event, items] : value["hooks"].items()) {
    if (items.is_array() && !our_commands(items, settings).empty()) {
      return true;
    }
  }
  return false;
}

bool is_sandshim_hook_command(const std::string& command, std::string_view agent) {
  hooks::ShellParse parse = hooks::parse_shell(command);
  if (parse.error || parse.commands.size() != 1) {
    return false;
  }
  const auto& words = parse.commands.front().words;
  if (words.size() < 4 || words[1].value != "hook" || words[2].value != "--agent" ||
      words[3].value != agent) {
    return false;
  }
  fs::path binary = words[0].value;
  return binary.filename().string().starts_with("sandshim") || binary == self_executable();
}

std::string hook_command_for(const fs::path& sandshim, std::string_view agent) {
  return shell_quote(sandshim.string()) + " hook --agent " + std::string(agent);
}

}  // namespace sandshim::install
