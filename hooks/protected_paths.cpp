#include "hooks/protected_paths.hpp"

#include <array>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "common/environment.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/path_patterns.hpp"

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

// What the policy names: the little a listing needs of it.
struct PolicyFiles {
  fs::path shim_dir;
  fs::path audit_db;
  std::vector<std::string> sources;
};

void add_sandshim_places(std::vector<ProtectedPlace>& places, const PolicyFiles& policy) {
  places.push_back({xdg_directory("config") / "sandshim", true, "sandshim's configuration"});
  places.push_back({xdg_directory("state") / "sandshim", true, "sandshim's state"});
  places.push_back({"/etc/sandshim", true, "sandshim's system configuration"});
  places.push_back({policy.shim_dir, true, "the shim directory"});
  const fs::path& db = policy.audit_db;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    places.push_back({db.string() + suffix, false, "the audit database"});
  }
  for (const std::string& source : policy.sources) {
    places.push_back({source, false, "a sandshim policy file"});
  }
}

void add_agent_places(std::vector<ProtectedPlace>& places) {
  for (Agent agent : all_agents()) {
    std::vector<ProtectedPlace> own = agent->user_places();
    places.insert(places.end(), own.begin(), own.end());
  }
}

// The start-up files of a login or interactive shell, in a home directory and in /etc.
constexpr std::array<std::string_view, 19> k_home_startup_files = {
    ".bashrc",  ".bash_profile", ".bash_login", ".bash_logout",    ".bash_aliases",
    ".profile", ".zshrc",        ".zshenv",     ".zprofile",       ".zlogin",
    ".zlogout", ".kshrc",        ".mkshrc",     ".cshrc",          ".tcshrc",
    ".login",   ".logout",       ".xprofile",   ".pam_environment"};
constexpr std::array<std::string_view, 9> k_system_startup_files = {
    "/etc/profile", "/etc/bash.bashrc", "/etc/bashrc", "/etc/bash.bash_logout", "/etc/zshrc",
    "/etc/zshenv",  "/etc/zprofile",    "/etc/zlogin", "/etc/environment"};
constexpr std::array<std::string_view, 4> k_system_startup_trees = {
    "/etc/profile.d", "/etc/zsh", "/etc/fish", "/etc/bash_completion.d"};

// The start-up files a host shell reads before anything else (Claude Code's shell snapshot runs
// a login shell on the host): a line there runs, unsandboxed, in every later session.
void add_startup_places(std::vector<ProtectedPlace>& places) {
  const std::string what = "a shell start-up file";
  fs::path home = home_directory();
  std::vector<fs::path> homes = {home};
  if (std::optional<fs::path> zdotdir = environment::zdotdir()) {
    homes.push_back(*zdotdir);
  }
  for (const fs::path& dir : homes) {
    for (std::string_view name : k_home_startup_files) {
      places.push_back({dir / name, false, what});
    }
  }
  places.push_back({xdg_directory("config") / "fish", true, what});
  places.push_back({home / ".config" / "fish", true, what});
  places.push_back({xdg_directory("config") / "environment.d", true, what});
  for (std::string_view file : k_system_startup_files) {
    places.push_back({fs::path(file), false, what});
  }
  for (std::string_view tree : k_system_startup_trees) {
    places.push_back({fs::path(tree), true, what});
  }
}

// Names that are protected wherever they are: workspace files compose up the tree, and an
// agent's project settings are read from whatever directory it runs in. As patterns, so a write
// whose target is only partly known is judged by the same table.
const std::vector<ProtectedName>& protected_names() {
  static const std::vector<ProtectedName> names = [] {
    std::string any(1, k_any_text);
    std::vector<ProtectedName> result{
        {any + "/.sandshim.conf", "a sandshim workspace policy (.sandshim.conf)"}};
    for (Agent agent : all_agents()) {
      std::vector<ProtectedName> own = agent->project_places();
      result.insert(result.end(), own.begin(), own.end());
    }
    result.push_back({any + "/.git/hooks", "git's hooks (.git/hooks)"});
    result.push_back({any + "/.git/hooks/" + any, "git's hooks (.git/hooks)"});
    result.push_back({any + "/.git/config", "git's config (.git/config can set core.hooksPath)"});
    return result;
  }();
  return names;
}

std::optional<std::string> protected_name(const std::string& pattern) {
  for (const ProtectedName& name : protected_names()) {
    if (patterns_overlap(pattern, name.pattern)) {
      return name.what;
    }
  }
  return std::nullopt;
}

std::optional<std::string> place_of(const fs::path& path, const ProtectedPaths& paths) {
  for (const ProtectedPlace& place : paths.places()) {
    if (covers(place, path)) {
      return place.what + " (" + place.path.string() + ")";
    }
  }
  return protected_name(path.string());
}

bool place_overlaps(const ProtectedPlace& place, const std::string& pattern) {
  std::string path = place.path.string();
  return patterns_overlap(pattern, path) ||
         (place.tree && patterns_overlap(pattern, path + "/" + k_unknown_pattern));
}

std::optional<std::string> pattern_place(const std::string& pattern, const ProtectedPaths& paths) {
  for (const ProtectedPlace& place : paths.places()) {
    if (place_overlaps(place, pattern)) {
      return place.what + " (" + place.path.string() + ")";
    }
  }
  return protected_name(pattern);
}

// The pattern with the directory before its first wildcard resolved through links.
std::string resolved_pattern(const std::string& pattern) {
  size_t wildcard = pattern.find_first_of(std::string{k_any_name, k_any_text, k_first_char});
  size_t slash = pattern.rfind('/', wildcard);
  if (slash == std::string::npos || slash == 0) {
    return pattern;
  }
  return resolved(pattern.substr(0, slash)).string() + pattern.substr(slash);
}

// Each place lexically normal, and also as its links resolve when that differs.
std::vector<ProtectedPlace> list_places(const PolicyFiles& policy, const fs::path& workspace) {
  std::vector<ProtectedPlace> places;
  add_sandshim_places(places, policy);
  add_agent_places(places);
  add_startup_places(places);
  if (std::optional<fs::path> hooks = git_hooks_path(workspace)) {
    places.push_back({*hooks, true, "git's hooks (core.hooksPath)"});
  }
  std::vector<ProtectedPlace> result;
  for (ProtectedPlace& place : places) {
    place.path = normal(place.path);
    fs::path real = resolved(place.path);
    if (real != place.path) {
      result.push_back({real, place.tree, place.what});
    }
    result.push_back(std::move(place));
  }
  return result;
}

}  // namespace

ProtectedPaths::ProtectedPaths(std::vector<ProtectedPlace> places)
    : m_listing(std::make_shared<Listing>()) {
  m_listing->places = std::move(places);
  std::call_once(m_listing->listed, [] {});  // listed already: nothing left to make
}

ProtectedPaths::ProtectedPaths(std::function<std::vector<ProtectedPlace>()> list)
    : m_listing(std::make_shared<Listing>()) {
  m_listing->list = std::move(list);
}

const std::vector<ProtectedPlace>& ProtectedPaths::places() const {
  static const std::vector<ProtectedPlace> k_none;
  if (!m_listing) {
    return k_none;
  }
  std::call_once(m_listing->listed, [this] { m_listing->places = m_listing->list(); });
  return m_listing->places;
}

ProtectedPaths protected_paths(const shim::Policy& policy, const fs::path& workspace) {
  PolicyFiles files{policy.effective_shim_dir(), policy.effective_audit_db(), policy.sources};
  return ProtectedPaths([files, workspace] { return list_places(files, workspace); });
}

std::optional<std::string> protected_path_reason(const fs::path& target, const fs::path& cwd,
                                                 const ProtectedPaths& paths) {
  fs::path absolute = normal(target.is_absolute() ? target : cwd / target);
  if (std::optional<std::string> what = place_of(absolute, paths)) {
    return what;
  }
  return place_of(resolved(absolute), paths);
}

std::optional<std::string> protected_pattern_reason(const std::string& pattern,
                                                    const ProtectedPaths& paths) {
  if (!has_wildcard(pattern)) {
    return protected_path_reason(pattern, "/", paths);
  }
  if (std::optional<std::string> what = pattern_place(pattern, paths)) {
    return what;
  }
  return pattern_place(resolved_pattern(pattern), paths);
}

std::string protected_write_refusal(const std::string& target, const std::string& what) {
  return "sandshim: " + quoted(target) + " is " + what +
         ", which the sandbox depends on; an agent may not change it. Ask the user to make the "
         "change";
}

}  // namespace sandshim::hooks
