#include "hooks/protected_paths.hpp"

#include <array>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "common/environment.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::hooks {

namespace fs = std::filesystem;

namespace {

fs::path normal(const fs::path& path) {
  return path.lexically_normal();
}

// The path with every link that exists resolved; the lexical form when that fails.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? normal(path) : normal(canonical);
}

// Component-wise, so /a/bc is not within /a/b; a trailing slash of the root is ignored.
bool is_within(const fs::path& path, const fs::path& root) {
  auto part = path.begin();
  for (const fs::path& root_part : root) {
    if (root_part.empty()) {
      continue;
    }
    if (part == path.end() || *part != root_part) {
      return false;
    }
    ++part;
  }
  return true;
}

bool covers(const ProtectedPlace& place, const fs::path& path) {
  return place.tree ? is_within(path, place.path) : path == place.path;
}

// git's core.hooksPath from the workspace's own .git/config: a place whose scripts git runs.
std::optional<fs::path> git_hooks_path(const fs::path& workspace) {
  std::ifstream config(workspace / ".git" / "config");
  bool in_core = false;
  for (std::string line; std::getline(config, line);) {
    std::string text = trim(line);
    if (text.starts_with('[')) {
      in_core = text.starts_with("[core");
      continue;
    }
    size_t equals = text.find('=');
    if (!in_core || equals == std::string::npos) {
      continue;
    }
    std::string key = trim(text.substr(0, equals));
    if (key == "hooksPath" || key == "hookspath") {
      fs::path value = trim(text.substr(equals + 1));
      return value.is_absolute() ? value : workspace / value;
    }
  }
  return std::nullopt;
}

void add_sandshim_places(std::vector<ProtectedPlace>& places, const shim::Policy& policy) {
  places.push_back({xdg_directory("config") / "sandshim", true, "sandshim's configuration"});
  places.push_back({xdg_directory("state") / "sandshim", true, "sandshim's state"});
  places.push_back({"/etc/sandshim", true, "sandshim's system configuration"});
  places.push_back({policy.effective_shim_dir(), true, "the shim directory"});
  fs::path db = policy.effective_audit_db();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    places.push_back({db.string() + suffix, false, "the audit database"});
  }
  for (const std::string& source : policy.sources) {
    places.push_back({source, false, "a sandshim policy file"});
  }
}

void add_agent_places(std::vector<ProtectedPlace>& places) {
  fs::path home = home_directory();
  fs::path claude = environment::claude_config_dir().value_or(home / ".claude");
  places.push_back({claude / "settings.json", false, "Claude Code's settings"});
  places.push_back({claude / "settings.local.json", false, "Claude Code's settings"});
  places.push_back({claude / "session-env", true, "Claude Code's session environment"});
  places.push_back({"/etc/claude-code", true, "Claude Code's managed settings"});
  places.push_back({environment::codex_home().value_or(home / ".codex"), true, "Codex's settings"});
  places.push_back({"/etc/codex", true, "Codex's system settings"});
  places.push_back({home / ".gemini", true, "Gemini CLI's settings"});
  places.push_back({"/etc/gemini-cli", true, "Gemini CLI's system settings"});
  places.push_back({home / ".cursor" / "hooks.json", false, "Cursor's hooks"});
  places.push_back({home / ".codeium" / "windsurf" / "hooks.json", false, "Windsurf's hooks"});
}

// Names that are protected wherever they are: workspace files compose up the tree, and an
// agent's project settings are read from whatever directory it runs in.
std::optional<std::string> protected_name(const fs::path& path) {
  std::vector<std::string> parts;
  for (const fs::path& part : path) {
    parts.push_back(part.string());
  }
  const std::string& name = parts.empty() ? std::string() : parts.back();
  if (name == ".sandshim.conf") {
    return "a sandshim workspace policy (.sandshim.conf)";
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& dir = parts[i];
    const std::string& next = parts[i + 1];
    bool last = i + 2 == parts.size();
    if (dir == ".codex") {
      return "Codex's project settings and hooks (.codex/)";
    }
    if (dir == ".gemini") {
      return "Gemini CLI's project settings and hooks (.gemini/)";
    }
    if (dir == ".claude" &&
        (next == "hooks" || (last && next.starts_with("settings") && next.ends_with(".json")))) {
      return "Claude Code's settings and hooks (.claude/settings*.json)";
    }
    if (dir == ".git" && (next == "hooks" || (last && next == "config"))) {
      return next == "hooks" ? "git's hooks (.git/hooks)"
                             : "git's config (.git/config can set core.hooksPath)";
    }
    if ((dir == ".cursor" || dir == ".windsurf") && last && next == "hooks.json") {
      return "an agent's hooks (" + dir + "/hooks.json)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> place_of(const fs::path& path, const ProtectedPaths& paths) {
  for (const ProtectedPlace& place : paths.places) {
    if (covers(place, path)) {
      return place.what + " (" + place.path.string() + ")";
    }
  }
  return protected_name(path);
}

}  // namespace

ProtectedPaths protected_paths(const shim::Policy& policy, const fs::path& workspace) {
  std::vector<ProtectedPlace> places;
  add_sandshim_places(places, policy);
  add_agent_places(places);
  if (std::optional<fs::path> hooks = git_hooks_path(workspace)) {
    places.push_back({*hooks, true, "git's hooks (core.hooksPath)"});
  }
  ProtectedPaths result;
  for (ProtectedPlace& place : places) {
    place.path = normal(place.path);
    fs::path real = resolved(place.path);
    if (real != place.path) {
      result.places.push_back({real, place.tree, place.what});
    }
    result.places.push_back(std::move(place));
  }
  return result;
}

std::optional<std::string> protected_path_reason(const fs::path& target, const fs::path& cwd,
                                                 const ProtectedPaths& paths) {
  fs::path absolute = normal(target.is_absolute() ? target : cwd / target);
  if (std::optional<std::string> what = place_of(absolute, paths)) {
    return what;
  }
  return place_of(resolved(absolute), paths);
}

std::string protected_write_refusal(const std::string& target, const std::string& what) {
  return "sandshim: " + quoted(target) + " is " + what +
         ", which the sandbox depends on; an agent may not change it. Ask the user to make the "
         "change";
}

}  // namespace sandshim::hooks
