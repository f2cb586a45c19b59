#include "hooks/protected_paths.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "common/paths.hpp"

namespace sandshim::hooks {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 2> k_protected_names = {".sandshim.conf", ".claude.json"};

bool starts_with_path(const fs::path& path, const fs::path& prefix) {
  auto mismatch = std::mismatch(prefix.begin(), prefix.end(), path.begin(), path.end());
  return mismatch.first == prefix.end();
}

// `.git/hooks/…`, `.git/config`, `.claude/settings*.json` and the agents' hook files, in any
// directory.
bool is_protected_by_name(const fs::path& path) {
  std::vector<std::string> parts;
  for (const fs::path& part : path) {
    parts.push_back(part.string());
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    bool last = i + 1 == parts.size();
    if (std::find(k_protected_names.begin(), k_protected_names.end(), part) !=
        k_protected_names.end()) {
      return true;
    }
    if (part == ".git" && (last || parts[i + 1] == "hooks" || parts[i + 1] == "config")) {
      return true;
    }
    if ((part == ".claude" || part == ".codex" || part == ".gemini" || part == ".cursor" ||
         part == ".windsurf") &&
        (last || parts[i + 1].starts_with("settings") || parts[i + 1].starts_with("hooks") ||
         parts[i + 1] == "config.toml")) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool is_protected_path(const ProtectedPaths& protected_paths, const fs::path& path) {
  fs::path normal = path.lexically_normal();
  if (is_protected_by_name(normal)) {
    return true;
  }
  return std::any_of(
      protected_paths.roots.begin(), protected_paths.roots.end(), [&](const fs::path& root) {
        fs::path normal_root = root.lexically_normal();
        return starts_with_path(normal, normal_root) || starts_with_path(normal_root, normal);
      });
}

ProtectedPaths protected_paths_for(const shim::Policy& policy, const fs::path& home) {
  ProtectedPaths paths;
  paths.roots = {xdg_directory("config") / "sandshim", xdg_directory("state") / "sandshim",
                 "/etc/sandshim", policy.effective_audit_db(), policy.effective_shim_dir()};
  for (const char* agent : {".claude", ".codex", ".gemini", ".cursor", ".codeium"}) {
    paths.roots.push_back(home / agent);
  }
  return paths;
}

}  // namespace sandshim::hooks
