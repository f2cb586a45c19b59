#include "install/agent_install.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "broker/mode.hpp"
#include "broker/settings.hpp"
#include "broker/unix_socket.hpp"
#include "common/command_doc.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/agents/agent.hpp"
#include "install/agent_settings.hpp"
#include "install/atomic_file.hpp"
#include "install/codex_route.hpp"
#include "install/gemini_env.hpp"
#include "install/json_text.hpp"
#include "install/skill.hpp"
#include "policy/policy.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

const char* const k_agent_usage =
    R"(sandshim install agent NAME [--project DIR | --user | --managed [--managed-only]] [--mode path|wrap] [--uninstall] [--dry-run]

Wires sandshim into a coding agent: merges its hook entries into the agent's own settings, so
every shell command the agent runs is checked by `sandshim hook` first, and installs a skill
(SKILL.md) that tells the agent what runs sandboxed and how to read failures.

NAME        file (project / --user)                                  events
%AGENTS%No permission rule is added or changed and nothing is approved: the agent's own approval flow
decides as before. Each hook command ends in a shell fallback that turns any failure of the
hook (sandshim missing, crashed, killed) into exit 2, which the agents treat as a block; its
timeout (60 s) is far above the hook's own 20-second deadline, past which it refuses.
`sandshim doctor` checks that each installed agent will call the hooks (folder and hook trust,
disableAllHooks, managed settings).
The skill goes to .agents/skills/sandshim/ and .claude/skills/sandshim/.

--managed (as root, for fleets): the hooks go where the agent's own uid cannot change them,
merged into what is there (the administrator's other settings stay as they are):
  claude    /etc/claude-code/managed-settings.json (--managed-only also sets
            allowManagedHooksOnly: no user or project hook runs, sandshim's do)
  gemini    /etc/gemini-cli/settings.json (GEMINI_CLI_SYSTEM_SETTINGS_PATH), which overrides
            the user's and the workspace's settings
Codex has no system hooks file sandshim writes: its requirements.toml ([hooks]) is the
administrator's; `sandshim doctor` names what it finds. The user-level install stays for
single users; no skill is installed by --managed.

--mode wrap (Claude Code): Claude Code's own shell becomes `sandshim -c`
(CLAUDE_CODE_SHELL_PREFIX in the settings' env), so every Bash command runs whole in the wrap
image and nothing of it on the host; the hooks are written in exec form, which Claude Code runs
on the host. The hook then has no objection to any command it can parse. Claude Code also
starts shell-form hooks and stdio MCP servers through the prefix: they run in the sandbox too.
Those commands write the workspace (sandbox.workspace = wrap, the default; git's config and
hooks and agent settings stay read-only, and each run's audit row names what changed);
sandbox.workspace = ro in sandshim's config keeps it read-only.
Other agents follow `hook.mode` in sandshim's config.

Everything else in those files stays byte for byte; running it twice changes nothing;
--uninstall removes exactly what it added. A file that is not valid JSON (comments included)
is never overwritten: sandshim stops and prints the entries to add by hand. Files are replaced
atomically and keep their permissions. The hook command is this binary's absolute path.

Examples:
  sandshim install agent claude                  # this project (its git root)
  sandshim install agent codex --user            # every project, for this user
  sandshim install agent cursor --dry-run        # show what would change
  sandshim install agent claude --mode wrap      # every Bash command in the sandbox
  sandshim install agent claude --uninstall
  sudo sandshim install agent claude --managed   # every user of this machine)";

struct AgentInstallOptions {
  std::string agent;
  fs::path root;
  bool user = false;
  bool uninstall = false;
  bool dry_run = false;
  InstallMode mode = InstallMode::path;
  bool managed = false;       // the agent's managed (system) settings
  bool managed_only = false;  // and only managed hooks run
};

// The usage with each agent's row (its descriptor's install_help).
std::string agent_usage() {
  std::string rows;
  for (hooks::Agent agent : hooks::all_agents()) {
    rows += agent->install_help;
  }
  std::string text = k_agent_usage;
  return text.replace(text.find("%AGENTS%"), 8, rows);
}

std::vector<std::string> agent_names() {
  std::vector<std::string> names;
  for (hooks::Agent agent : hooks::all_agents()) {
    names.emplace_back(agent->flag);
  }
  return names;
}

}  // namespace

CommandDoc install_agent_doc() {
  po::options_description options("Options");
  options.add_options()("agent", po::value<std::string>()->value_name("NAME"),
                        hooks::agent_flags(" or ").c_str())(
      "project", po::value<std::string>()->value_name("DIR"),
      "install into this project (default: the git root of the current directory)")(
      "user", "install into the user's own settings (every project)")(
      "managed", "install into the agent's managed settings, which its user cannot change")(
      "managed-only", "with --managed: only managed hooks run (Claude Code)")(
      "mode", po::value<std::string>()->value_name("MODE"),
      "path (default) or wrap: Claude Code's shell runs every command in the sandbox")(
      "uninstall", "remove what an earlier install added")("dry-run", "show the changes only");
  return make_command_doc("install agent", "wire sandshim into a coding agent's hooks",
                          agent_usage(), options, {}, agent_names());
}

namespace {

fs::path project_root(const po::variables_map& vm) {
  std::error_code ec;
  fs::path start =
      vm.count("project") != 0 ? fs::path(vm["project"].as<std::string>()) : fs::current_path(ec);
  if (!fs::is_directory(start, ec)) {
    throw Fatal("project directory " + quoted(start.string()) +
                    " does not exist; pass an existing directory to --project",
                exit_code::k_usage);
  }
  fs::path canonical = fs::canonical(start);
  return vm.count("project") != 0 ? canonical : find_git_root(canonical).value_or(canonical);
}

InstallMode install_mode(const po::variables_map& vm, const std::string& agent) {
  std::string mode = vm.count("mode") != 0 ? vm["mode"].as<std::string>() : "path";
  if (mode != "path" && mode != "wrap") {
    throw Fatal("--mode " + quoted(mode) + " is not path or wrap", exit_code::k_usage);
  }
  if (mode == "wrap" && agent != "claude") {
    throw Fatal("--mode wrap is for Claude Code (its shell prefix); " + agent +
                    " follows hook.mode in sandshim's config",
                exit_code::k_usage);
  }
  return mode == "wrap" ? InstallMode::wrap : InstallMode::path;
}

std::optional<AgentInstallOptions> parse_options(const std::vector<std::string>& args) {
  po::positional_options_description positional;
  positional.add("agent", 1);
  po::variables_map vm;
  if (!parse_subcommand_options(args, install_agent_doc(), vm, &positional)) {
    return std::nullopt;
  }
  if (vm.count("agent") == 0) {
    throw Fatal("which agent? sandshim install agent " + join(agent_names(), "|"),
                exit_code::k_usage);
  }
  if (vm.count("user") + vm.count("project") + vm.count("managed") > 1) {
    throw Fatal("--project, --user and --managed exclude each other; give one of them",
                exit_code::k_usage);
  }
  if (vm.count("managed-only") != 0 && vm.count("managed") == 0) {
    throw Fatal("--managed-only goes with --managed", exit_code::k_usage);
  }
  AgentInstallOptions result{vm["agent"].as<std::string>(),
                             {},
                             vm.count("user") != 0,
                             vm.count("uninstall") != 0,
                             vm.count("dry-run") != 0};
  result.mode = install_mode(vm, result.agent);
  result.managed = vm.count("managed") != 0;
  result.managed_only = vm.count("managed-only") != 0;
  result.root = result.managed ? fs::path("/") : result.user ? home_directory() : project_root(vm);
  return result;
}

std::string shown(const fs::path& file, const fs::path& root) {
  if (root == "/") {
    return file.string();
  }
  fs::path relative = file.lexically_relative(root);
  return relative.empty() || relative.begin()->string() == ".." ? file.string() : relative.string();
}

void print_change(const std::string& change, const fs::path& file, const fs::path& root,
                  const std::string& note) {
  std::cout << "  " << change << std::string(change.size() < 10 ? 10 - change.size() : 1, ' ')
            << shown(file, root) << (note.empty() ? "" : "  (" + note + ")") << "\n";
}

// The settings file's new text, or a Fatal that tells the user what to add by hand.
Merged merged_or_explain(const fs::path& file, const std::optional<std::string>& text,
                         const AgentSettings& settings, const std::string& command,
                         bool uninstall) {
  try {
    return uninstall ? unmerge_hooks(text, settings)
                     : merge_hooks(text, settings, command, self_executable());
  } catch (const JsonTextError& e) {
    std::string entries = merge_hooks(std::nullopt, settings, command, self_executable()).text;
    throw Fatal(quoted(file.string()) + ": " + e.what() + "; nothing was changed. " +
                (uninstall ? "Remove sandshim's hook entries by hand."
                           : "Fix the file, or add these entries to it by hand:\n" + entries));
  }
}

// Settings files sandshim created, so uninstall deletes only those (a user's own `{}` stays).
fs::path created_files_record() {
  return xdg_directory("state") / "sandshim" / "created-agent-files.json";
}

// Claude Code settings files where sandshim added sandbox.network.allowAllUnixSockets, so
// uninstall removes only that (a user's own value stays).
fs::path unix_sockets_record() {
  return xdg_directory("state") / "sandshim" / "unix-sockets-allowed.json";
}

nlohmann::json recorded_files(const fs::path& record) {
  std::optional<std::string> text = read_file(record);
  nlohmann::json files = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  return files.is_array() ? files : nlohmann::json::array();
}

void remember(const fs::path& record, const fs::path& file, bool present) {
  nlohmann::json files = recorded_files(record);
  auto entry = std::find(files.begin(), files.end(), file.string());
  if (present && entry == files.end()) {
    files.push_back(file.string());
  } else if (!present && entry != files.end()) {
    files.erase(entry);
  } else {
    return;
  }
  write_file_atomically(record, files.dump(2) + "\n");
}

bool recorded(const fs::path& record, const fs::path& file) {
  nlohmann::json files = recorded_files(record);
  return std::find(files.begin(), files.end(), file.string()) != files.end();
}

// Writes the result; returns the change to report (an emptied file sandshim created is deleted).
Change apply(const fs::path& file, const Merged& merged, bool dry_run) {
  bool remove = merged.only_skeleton_left && recorded(created_files_record(), file);
  Change change = remove ? Change::deleted : merged.change;
  if (dry_run || change == Change::unchanged || change == Change::absent) {
    return change;
  }
  if (remove) {
    std::error_code ec;
    fs::remove(file, ec);
    remove_empty_directories(file.parent_path(), 1);
    remember(created_files_record(), file, false);
    return change;
  }
  write_file_atomically(file, merged.text);
  if (change == Change::created) {
    remember(created_files_record(), file, true);
  }
  return change;
}

fs::path settings_file(const AgentSettings& settings, const AgentInstallOptions& options) {
  if (options.managed) {
    if (managed_settings_file(settings).empty()) {
      throw Fatal(settings.display + " has no managed settings file sandshim writes" +
                      (settings.name == "codex"
                           ? ": Codex's system hooks are the administrator's requirements.toml "
                             "([hooks]); install with --user for each user instead"
                           : "; install with --user or --project"),
                  exit_code::k_usage);
    }
    if (options.managed_only && managed_only_key(settings).empty()) {
      throw Fatal("--managed-only: " + settings.display + " has no managed-only switch",
                  exit_code::k_usage);
    }
    return managed_settings_file(settings);
  }
  return options.user ? settings.user_file : options.root / settings.project_file;
}

// Another agent in the same scope still uses sandshim: the shared skill stays.
bool skill_still_needed(const AgentInstallOptions& options) {
  for (const AgentSettings& other : all_agent_settings()) {
    if (other.name == options.agent) {
      continue;
    }
    std::optional<std::string> text = read_file(settings_file(other, options));
    if (text && has_sandshim_hooks(*text, other)) {
      return true;
    }
  }
  return false;
}

std::vector<SkillChange> update_skill(const AgentInstallOptions& options) {
  if (options.managed) {
    return {};
  }
  std::vector<fs::path> directories = skill_directories(options.root, options.user);
  if (!options.uninstall) {
    std::error_code ec;
    fs::path workspace = options.user ? fs::current_path(ec) : options.root;
    shim::Policy policy = shim::load_policy({workspace, {}});
    return install_skill(directories, skill_markdown(policy), options.dry_run);
  }
  if (skill_still_needed(options)) {
    return {};
  }
  return remove_skill(directories, options.dry_run);
}

// Gemini CLI: the BASH_ENV line beside its settings (not for --managed: Gemini CLI reads no
// system .env), so its commands reach the shims by name without a rewrite.
std::optional<GeminiEnvChange> update_gemini_route(const AgentSettings& settings,
                                                   const AgentInstallOptions& options,
                                                   fs::path& env_file) {
  if (settings.name != "gemini" || options.managed) {
    return std::nullopt;
  }
  std::error_code ec;
  fs::path workspace = options.user ? fs::current_path(ec) : options.root;
  env_file =
      (options.user ? settings.user_file : options.root / settings.project_file).parent_path() /
      ".env";
  GeminiEnvRequest request{env_file, options.user ? fs::path() : options.root / ".env",
                           shim::load_policy({workspace, {}}).effective_shim_dir(),
                           options.uninstall, options.dry_run};
  return update_gemini_env(request);
}

// Codex: the routing script and the rule that allows it (not for --managed, which Codex does
// not take from sandshim). The rules file is the user's: a project's uninstall leaves it to the
// user's other projects, `--user --uninstall` removes it.
std::optional<CodexRouteChange> update_codex_route_for(const AgentSettings& settings,
                                                       const AgentInstallOptions& options) {
  if (settings.name != "codex" || options.managed || (options.uninstall && !options.user)) {
    return std::nullopt;
  }
  std::error_code ec;
  fs::path workspace = options.user ? fs::current_path(ec) : options.root;
  return update_codex_route(shim::load_policy({workspace, {}}).effective_shim_dir(),
                            options.uninstall, options.dry_run);
}

void print_next_steps(const AgentSettings& settings, const AgentInstallOptions& options) {
  if (options.uninstall) {
    std::cout << "The agent stops calling sandshim once it reloads its settings.\n";
    return;
  }
  if (options.managed) {
    std::cout << "The hooks are in " << settings.display
              << "'s managed settings: its users cannot remove or change them. New sessions "
                 "load them; `sandshim doctor` checks them.\n";
    return;
  }
  std::cout << "Next, in " << settings.display << ":\n";
  for (const std::string& step : settings.next_steps) {
    std::cout << "  - " << step << "\n";
  }
}

// Claude Code's settings this install can see, lowest precedence first; `file` as it will be.
std::vector<ClaudeSettingsSource> claude_sources(const AgentSettings& settings,
                                                 const AgentInstallOptions& options,
                                                 const fs::path& file, const std::string& text) {
  std::vector<fs::path> files;
  if (!options.managed) {
    files.push_back(settings.user_file);
  }
  if (!options.managed && !options.user) {
    files.push_back(options.root / ".claude" / "settings.json");
    files.push_back(options.root / ".claude" / "settings.local.json");
  }
  files.push_back(managed_settings_file(settings));
  std::vector<ClaudeSettingsSource> sources;
  for (const fs::path& source : files) {
    sources.push_back(
        {source.string(), source == file ? text : read_file(source).value_or(std::string())});
  }
  return sources;
}

// Whether the shims' runs go through the broker: `broker.mode = required`, or `auto` with one
// answering.
bool shims_use_broker() {
  broker::ClientSettings client = broker::client_settings();
  return client.mode == broker::BrokerMode::required ||
         (client.mode == broker::BrokerMode::automatic &&
          broker::connect_unix(client.socket).has_value());
}

// What wrap mode's shell gets of the workspace, for the install's output ("": not wrap mode).
std::string wrap_workspace_note(const AgentInstallOptions& options) {
  if (options.uninstall || options.mode != InstallMode::wrap) {
    return "";
  }
  if (shims_use_broker()) {
    return "wrap mode through the broker: its commands get the workspace as " +
           std::string(shim::k_system_config) +
           " says: by default they may write it (sandbox.workspace = wrap; git's config and "
           "hooks and agent settings stay read-only, as the broker's copies), sandbox.workspace "
           "= ro there keeps it read-only";
  }
  try {
    shim::Policy policy = shim::load_policy({options.root, {}});
    if (shim::workspace_for_run(policy.workspace_mode, true) == shim::WorkspaceMode::rw) {
      return "wrap mode: its commands may write the workspace (sandbox.workspace = " +
             shim::to_string(policy.workspace_mode) +
             "); git's config and hooks and agent settings stay read-only, and each run's audit "
             "row names what it changed";
    }
    auto origin = policy.origins.find("sandbox.workspace");
    return "wrap mode: its commands get a read-only workspace (sandbox.workspace = ro" +
           (origin == policy.origins.end() ? "" : ", " + origin->second.describe()) +
           "): builds, formatters and git commits that write it fail; sandbox.workspace = wrap "
           "opens it to them alone";
  } catch (const Fatal&) {
    return "";  // the next run names what is wrong with the config
  }
}

// Why Claude Code's sandbox must not be opened to every unix socket for this install ("": it
// may). The shims must reach their engine only through the broker: in direct mode, or for a uid
// that reaches the engine around the broker, sandboxed commands would get the engine's socket.
std::string unix_sockets_refused(const AgentInstallOptions& options) {
  if (!shims_use_broker()) {
    return "the shims use the engine's socket (direct mode): allowing every unix socket would "
           "give sandboxed commands the engine itself, so sandboxed interpreters exit 125; use "
           "the broker (install/setup.sh), or leave Claude Code's sandbox off";
  }
  std::vector<std::string> ways =
      options.managed ? std::vector<std::string>{} : broker::engine_access();
  if (!ways.empty()) {
    return "this uid " + join(ways, ", ") +
           ": allowing every unix socket would give sandboxed commands the engine around the "
           "broker, so sandboxed interpreters exit 125; take it out of the engine's group, then "
           "install again";
  }
  return "";
}

// The line an install prints about Claude Code's sandbox and the broker's socket ("": none).
std::string claude_sandbox_note(const ClaudeSandbox& sandbox, const std::string& refused,
                                bool allowed) {
  if (!sandbox.enabled) {
    return "";
  }
  std::string on = "Claude Code's sandbox is on (" + sandbox.enabled_in + ")";
  if (!refused.empty()) {
    return on + ", and " + refused;
  }
  if (!allowed) {
    return on + ", and allowAllUnixSockets is false in " + sandbox.all_unix_sockets_in +
           ": sandboxed interpreters exit 125 (the broker's socket is refused)";
  }
  return on + ": sandbox.network.allowAllUnixSockets lets its commands reach the broker's socket " +
         broker::client_settings().socket.string() +
         ", and every other unix socket they may open (on Linux it allows none by path)";
}

// Claude Code's own sandbox refuses the broker's socket with every other unix socket (Linux:
// allowAllUnixSockets or nothing). When the sandbox is on and the shims use the broker, an
// Adds sandshim's allowAllUnixSockets to `merged` when `wanted` and not set anywhere, or takes
// out the one it added (`ours`) when no longer wanted; `ours` follows.
void update_all_unix_sockets(Merged& merged, bool& ours, bool wanted, const ClaudeSandbox& sandbox,
                             const fs::path& file) {
  try {
    if (ours && (!wanted || sandbox.all_unix_sockets == false)) {
      ours = false;
      if (!wanted) {
        merged.text = without_all_unix_sockets(merged.text);
      }
    } else if (wanted && !sandbox.all_unix_sockets) {
      merged.text = with_all_unix_sockets(merged.text);
      ours = true;
    }
  } catch (const JsonTextError& e) {
    throw Fatal(quoted(file.string()) + ": " + e.what() + "; nothing was changed. Set \"" +
                k_claude_all_unix_sockets + "\" by hand, or leave Claude Code's sandbox off.");
  }
}

// install adds sandbox.network.allowAllUnixSockets to `merged` (a value already set anywhere
// stays); it takes out only the one it added (recorded) when uninstalled or no longer wanted.
// Sets `ours` to whether `file` then holds sandshim's; returns the line to print.
std::string claude_unix_sockets(const AgentSettings& settings, const AgentInstallOptions& options,
                                const fs::path& file, Merged& merged, bool& ours) {
  ours = recorded(unix_sockets_record(), file);
  if (merged.change == Change::absent) {
    ours = false;
    return "";
  }
  ClaudeSandbox sandbox = claude_sandbox(claude_sources(settings, options, file, merged.text));
  bool install = !options.uninstall && sandbox.enabled;
  std::string refused = install ? unix_sockets_refused(options) : "";
  bool wanted = install && refused.empty();
  std::string before = merged.text;
  update_all_unix_sockets(merged, ours, wanted, sandbox, file);
  if (merged.text != before) {
    merged.change = merged.change == Change::unchanged
                        ? (options.uninstall ? Change::removed : Change::updated)
                        : merged.change;
    nlohmann::ordered_json left = JsonText(merged.text).value();
    merged.only_skeleton_left = options.uninstall && (left.empty() || left == settings.skeleton);
  }
  bool allowed = wanted && (ours || sandbox.all_unix_sockets.value_or(false));
  return options.uninstall ? "" : claude_sandbox_note(sandbox, refused, allowed);
}

// The managed-only settings (only managed hooks run) on top of the merged file.
void add_managed_only(Merged& merged, const AgentSettings& settings) {
  std::string text = with_managed_only(merged.text, settings);
  merged.change =
      text != merged.text && merged.change == Change::unchanged ? Change::updated : merged.change;
  merged.text = text;
}

// "sandshim: Claude Code, user ROOT": which agent, which settings layer, which root.
void print_install_header(const AgentSettings& settings, const AgentInstallOptions& options) {
  std::cout << "sandshim: " << settings.display << ", "
            << (options.managed ? "managed"
                : options.user  ? "user"
                                : "project")
            << " " << options.root.string()
            << (options.dry_run ? " (dry run: nothing written)" : "") << "\n";
}

// The settings of the agent the options name; a usage error for an unknown one.
AgentSettings named_agent_settings(const AgentInstallOptions& options) {
  std::optional<AgentSettings> settings = agent_settings_named(options.agent, options.mode);
  if (!settings) {
    throw Fatal("unknown agent " + quoted(options.agent) + " (" + hooks::agent_flags() + ")",
                exit_code::k_usage);
  }
  return *settings;
}

int run(const AgentInstallOptions& options) {
  AgentSettings settings = named_agent_settings(options);
  fs::path file = settings_file(settings, options);
  std::string command = hook_command_for(self_executable(), settings.name);
  Merged merged = merged_or_explain(file, read_file(file), settings, command, options.uninstall);
  if (options.managed_only && !options.uninstall) {
    add_managed_only(merged, settings);
  }
  bool sockets_added = false;
  std::string sockets_note =
      settings.name == "claude"
          ? claude_unix_sockets(settings, options, file, merged, sockets_added)
          : "";
  Change change = apply(file, merged, options.dry_run);
  if (settings.name == "claude" && !options.dry_run) {
    remember(unix_sockets_record(), file, sockets_added && change != Change::deleted);
  }
  std::vector<SkillChange> skills = update_skill(options);
  fs::path env_file;
  std::optional<GeminiEnvChange> route = update_gemini_route(settings, options, env_file);
  print_install_header(settings, options);
  print_change(to_string(change), file, options.root,
               options.uninstall ? "" : "hooks run " + command);
  if (std::optional<CodexRouteChange> codex = update_codex_route_for(settings, options)) {
    print_change(to_string(codex->change), codex->file, options.root, codex->note);
  }
  if (route && (route->change != Change::absent || !route->note.empty())) {
    print_change(route->change == Change::absent ? "skipped" : to_string(route->change), env_file,
                 options.root, route->note);
  }
  for (const std::string& note : {sockets_note, wrap_workspace_note(options)}) {
    if (!note.empty()) {
      std::cout << "  " << note << "\n";
    }
  }
  for (const SkillChange& skill : skills) {
    print_change(to_string(skill.change), skill.file, options.root, skill.note);
  }
  print_next_steps(settings, options);
  return exit_code::k_ok;
}

}  // namespace

int install_agent_main(const std::vector<std::string>& args) {
  std::optional<AgentInstallOptions> options = parse_options(args);
  return options ? run(*options) : exit_code::k_ok;
}

}  // namespace sandshim::install
