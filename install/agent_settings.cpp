#include "install/agent_settings.hpp"

#include <cstdlib>
#include <ranges>

#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/shell_parser.hpp"
#include "install/json_text.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// What every handler runs after sandshim: exit 0 and sandshim's own exit 2 pass; anything else
// (not found, crashed, killed) becomes exit 2 with a reason, which every agent treats as a block.
constexpr std::string_view k_fail_closed_suffix =
    " || { s=$?; [ \"$s\" -eq 2 ] && exit 2; echo \"sandshim: the hook failed (exit $s), so "
    "the command was not run; run: sandshim doctor\" >&2; exit 2; }";

// The entry's item with the hook command set: in the handler itself, or in a group's only
// handler; in exec form, as the script of `/bin/sh -c`.
Json filled(const HookEntry& entry, Layout layout, const std::string& command) {
  Json item = entry.item;
  Json& handler = layout == Layout::grouped ? item["hooks"][0] : item;
  (handler.contains("args") ? handler["args"][1] : handler["command"]) = command;
  return item;
}

bool is_ours(const Json& handler, std::string_view agent) {
  std::optional<std::string> script = handler_script(handler);
  return script && is_sandshim_hook_command(*script, agent);
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

// The handler as this version writes it (matcher, timeout, fail-closed command), replacing
// what an earlier version wrote at `command_path`; a group holding other handlers keeps its
// matcher. True when changed.
bool replace_our_handler(JsonText& doc, const JsonPath& event, const Json& items,
                         const JsonPath& command_path, Json wanted, Layout layout) {
  JsonPath handler(command_path.begin(), command_path.end() - 1);  // drop "command"
  size_t index = std::get<size_t>(handler.front());
  bool whole_group = layout == Layout::flat || items[index]["hooks"].size() == 1;
  JsonPath target = whole_group ? JsonPath{index} : handler;
  if (!whole_group) {
    wanted = wanted["hooks"][0];
  }
  if (value_at(doc.value(), joined(event, target)) == wanted) {
    return false;
  }
  doc.replace(joined(event, target), wanted);
  return true;
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
  return replace_our_handler(doc, event, items, ours.front(),
                             filled(entry, settings.layout, command), settings.layout);
}

// Removes sandshim's handlers under one event, back to front so indexes stay valid.
bool unmerge_event(JsonText& doc, const AgentSettings& settings, const std::string& event_name) {
  JsonPath event{std::string("hooks"), event_name};
  Json items = value_at(doc.value(), event);
  if (!items.is_array()) {
    return false;
  }
  std::vector<JsonPath> ours = our_commands(items, settings);
  // Reverse iterators, not std::ranges::reverse_view: clang 14 (the sanitizer tree's compiler)
  // cannot instantiate libstdc++ 12's ranges over this element type.
  for (auto it = ours.rbegin(); it != ours.rend(); ++it) {
    const JsonPath& command = *it;
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

constexpr const char* k_shell_prefix_variable = "CLAUDE_CODE_SHELL_PREFIX";

// A CLAUDE_CODE_SHELL_PREFIX sandshim wrote: `<a binary named sandshim*> -c`.
bool is_sandshim_shell_prefix(const Json& value) {
  if (!value.is_string()) {
    return false;
  }
  std::string text = value.get<std::string>();
  return text.ends_with(" -c") &&
         fs::path(text.substr(0, text.size() - 3)).filename().string().starts_with("sandshim");
}

// Removes sandshim's CLAUDE_CODE_SHELL_PREFIX, and "env" when nothing else is left in it; true if
// changed. `value` is the document's.
bool remove_shell_prefix(JsonText& doc, Json& value) {
  JsonPath env{std::string("env")};
  JsonPath entry{std::string("env"), std::string(k_shell_prefix_variable)};
  if (!doc.contains(entry) || !is_sandshim_shell_prefix(value["env"][k_shell_prefix_variable])) {
    return false;
  }
  doc.remove(entry);
  if (doc.size(env) == 0) {
    doc.remove(env);
  }
  return true;
}

// Sets or removes sandshim's CLAUDE_CODE_SHELL_PREFIX in the settings' "env"; true if changed.
bool merge_shell_prefix(JsonText& doc, const AgentSettings& settings, const fs::path& sandshim) {
  if (settings.name != "claude") {
    return false;
  }
  JsonPath env{std::string("env")};
  JsonPath entry{std::string("env"), std::string(k_shell_prefix_variable)};
  Json value = doc.value();
  if (!settings.sandbox_shell) {
    return remove_shell_prefix(doc, value);
  }
  Json wanted = hooks::sandbox_shell_prefix(sandshim);
  if (!doc.contains(env)) {
    doc.add_member({}, "env", Json{{k_shell_prefix_variable, wanted}});
    return true;
  }
  require_kind(value["env"], value["env"].is_object(), "\"env\"");
  if (!doc.contains(entry)) {
    doc.add_member(env, k_shell_prefix_variable, wanted);
    return true;
  }
  if (value["env"][k_shell_prefix_variable] == wanted) {
    return false;
  }
  doc.replace(entry, wanted);
  return true;
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
  std::vector<AgentSettings> all;
  for (hooks::Agent agent : hooks::all_agents()) {
    all.push_back(agent->settings(InstallMode::path));
  }
  return all;
}

std::optional<AgentSettings> agent_settings_named(std::string_view name, InstallMode mode) {
  std::optional<hooks::Agent> agent = hooks::agent_named(name);
  return agent ? std::optional<AgentSettings>((*agent)->settings(mode)) : std::nullopt;
}

fs::path managed_settings_file(const AgentSettings& settings) {
  return settings.managed_file;
}

std::string managed_only_key(const AgentSettings& settings) {
  return settings.managed_only_key;
}

std::string with_managed_only(const std::string& text, const AgentSettings& settings) {
  std::string name = managed_only_key(settings);
  JsonText doc(text);
  JsonPath key{name};
  if (!doc.contains(key)) {
    doc.add_member({}, name, true);
  } else if (doc.value()[name] != true) {
    doc.replace(key, true);
  }
  return doc.text();
}

std::string claude_shell_prefix_in(const std::string& text) {
  Json value = Json::parse(text, nullptr, false);
  if (!value.is_object() || !value.contains("env") || !value["env"].is_object() ||
      !value["env"].contains(k_shell_prefix_variable) ||
      !value["env"][k_shell_prefix_variable].is_string()) {
    return "";
  }
  return value["env"][k_shell_prefix_variable].get<std::string>();
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
                   const std::string& hook_command, const fs::path& sandshim) {
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
  changed = merge_shell_prefix(doc, settings, sandshim) || changed;
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
  AgentSettings without_shell = settings;
  without_shell.sandbox_shell = false;
  removed = merge_shell_prefix(doc, without_shell, {}) || removed;
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

ClaudeSandbox claude_sandbox(const std::vector<ClaudeSettingsSource>& sources) {
  ClaudeSandbox sandbox;
  for (const ClaudeSettingsSource& source : sources) {
    Json value = Json::parse(source.text, nullptr, false);
    if (!value.is_object() || !value.contains("sandbox") || !value["sandbox"].is_object()) {
      continue;
    }
    const Json& settings = value["sandbox"];
    if (settings.contains("enabled") && settings["enabled"].is_boolean()) {
      sandbox.enabled = settings["enabled"].get<bool>();
      sandbox.enabled_in = source.name;
    }
    if (settings.contains("network") && settings["network"].is_object() &&
        settings["network"].contains("allowAllUnixSockets") &&
        settings["network"]["allowAllUnixSockets"].is_boolean()) {
      sandbox.all_unix_sockets = settings["network"]["allowAllUnixSockets"].get<bool>();
      sandbox.all_unix_sockets_in = source.name;
    }
  }
  return sandbox;
}

std::string with_all_unix_sockets(const std::string& text) {
  JsonText doc(text);
  Json value = doc.value();
  require_kind(value, value.is_object(), "the settings file");
  const JsonPath sandbox{std::string("sandbox")};
  const JsonPath network{std::string("sandbox"), std::string("network")};
  if (!doc.contains(sandbox)) {
    doc.add_member({}, "sandbox", Json{{"network", Json{{"allowAllUnixSockets", true}}}});
    return doc.text();
  }
  require_kind(value["sandbox"], value["sandbox"].is_object(), "\"sandbox\"");
  if (!doc.contains(network)) {
    doc.add_member(sandbox, "network", Json{{"allowAllUnixSockets", true}});
    return doc.text();
  }
  require_kind(value["sandbox"]["network"], value["sandbox"]["network"].is_object(),
               "\"sandbox.network\"");
  if (!value["sandbox"]["network"].contains("allowAllUnixSockets")) {
    doc.add_member(network, "allowAllUnixSockets", true);
  }
  return doc.text();
}

std::string without_all_unix_sockets(const std::string& text) {
  JsonText doc(text);
  const JsonPath sandbox{std::string("sandbox")};
  const JsonPath network{std::string("sandbox"), std::string("network")};
  const JsonPath key{std::string("sandbox"), std::string("network"),
                     std::string("allowAllUnixSockets")};
  if (!doc.contains(key)) {
    return text;
  }
  doc.remove(key);
  if (doc.size(network) == 0) {
    doc.remove(network);
  }
  if (doc.size(sandbox) == 0) {
    doc.remove(sandbox);
  }
  return doc.text();
}

bool is_sandshim_hook_command(const std::string& command, std::string_view agent) {
  size_t fallback = command.find(" || ");
  if (fallback != std::string::npos && command.substr(fallback) != k_fail_closed_suffix) {
    return false;
  }
  hooks::ShellParse parse = hooks::parse_shell(command.substr(0, fallback));
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
  return shell_quote(sandshim.string()) + " hook --agent " + std::string(agent) +
         std::string(k_fail_closed_suffix);
}

std::optional<std::string> handler_script(const Json& handler) {
  if (!handler.is_object() || !handler.contains("command") || !handler["command"].is_string()) {
    return std::nullopt;
  }
  if (!handler.contains("args")) {
    return handler["command"].get<std::string>();
  }
  const Json& args = handler["args"];
  if (handler["command"] != "/bin/sh" || !args.is_array() || args.size() != 2 || args[0] != "-c" ||
      !args[1].is_string()) {
    return std::nullopt;
  }
  return args[1].get<std::string>();
}

}  // namespace sandshim::install
