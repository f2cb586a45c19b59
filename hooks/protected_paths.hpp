#pragma once

// The files the sandbox depends on, which no agent may write: sandshim's config and state, the
// audit database, the shim directory, the agents' own settings and hook files, `.sandshim.conf`,
// `.git/hooks`, git's core.hooksPath and the shell start-up files (`~/.bashrc` and kin). The one
// place that knows them: the file-tool check of the hook and the shell analysis of Bash-side writes
// (redirections, tee, cp…) both ask here.

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace sandshim::hooks {

// One protected place: a directory with everything below it, or exactly one file.
struct ProtectedPlace {
  std::filesystem::path path;  // absolute, lexically normal
  bool tree = false;
  std::string what;  // "sandshim's configuration", "the audit database"…
};

// A name protected wherever it is, as a path pattern (hooks/path_patterns.hpp): an agent's project
// settings are read from whatever directory it runs in.
struct ProtectedName {
  std::string pattern;
  std::string what;
};

// The protected places, listed when first asked for: most commands write nothing, and the list
// resolves some seventy paths through links (about 400 system calls, a quarter of a hook's own
// instructions). Copies share one listing.
class ProtectedPaths {
 public:
  ProtectedPaths() = default;
  // A fixed list.
  explicit ProtectedPaths(std::vector<ProtectedPlace> places);
  // The list `list` makes, once, on first use.
  explicit ProtectedPaths(std::function<std::vector<ProtectedPlace>()> list);

  const std::vector<ProtectedPlace>& places() const;

 private:
  struct Listing {
    std::function<std::vector<ProtectedPlace>()> list;
    std::vector<ProtectedPlace> places;
    std::once_flag listed;
  };
  std::shared_ptr<Listing> m_listing;
};

// Where things live for this policy and workspace; the user's directories come from HOME, XDG_*
// and the agents' own variables (CLAUDE_CONFIG_DIR, CODEX_HOME: their descriptors), read on first
// use of the result (the hook's environment does not change meanwhile).
ProtectedPaths protected_paths(const shim::Policy& policy, const std::filesystem::path& workspace);

// What `target` is when an agent must not write it, nullopt when it may. `target` is resolved
// against `cwd` when relative, and through symbolic links as far as they exist, so a link inside
// the workspace pointing at the config is seen for what it is.
std::optional<std::string> protected_path_reason(const std::filesystem::path& target,
                                                 const std::filesystem::path& cwd,
                                                 const ProtectedPaths& paths);

// The same for a path pattern (hooks/path_patterns.hpp), absolute: what a file it may name is,
// when one of them is protected.
std::optional<std::string> protected_pattern_reason(const std::string& pattern,
                                                    const ProtectedPaths& paths);

// The refusal sent to the model for a write to `target`, one line.
std::string protected_write_refusal(const std::string& target, const std::string& what);

}  // namespace sandshim::hooks
