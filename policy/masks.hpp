#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "policy/workspace.hpp"

namespace sandshim::shim {

// One workspace path covered inside the container by an empty read-only file or directory.
struct MaskedPath {
  std::filesystem::path path;  // absolute, inside the workspace (the same path inside)
  bool directory = false;
};

// What sandbox.hide covers in one workspace, decided on the host before the container starts.
struct MaskPlan {
  std::vector<MaskedPath> paths;
  std::vector<std::string> matched_globs;  // the globs that matched at least one path, sorted
  int64_t scanned = 0;                     // directory entries looked at
};

// The most paths one run masks: each is a mount, and engines slow down with thousands.
inline constexpr size_t k_max_masked_paths = 512;

// Secrets that commonly sit in repositories; a trailing `/` matches directories only.
const std::vector<std::string>& default_hide_globs();

// The globs in force: the defaults and every layer's sandbox.hide, minus a trusted
// sandbox.unhide.
std::vector<std::string> effective_hide_globs(const std::vector<std::string>& added,
                                              const std::vector<std::string>& removed);

// Why a glob cannot be used, or empty: globs are relative to the workspace, never above it.
std::string invalid_hide_glob(const std::string& glob);

// Walks the workspace (never into `.git`, never through symlinks) and lists what the globs
// match; a glob without `/` matches a name at any depth, one with `/` the path from the root.
// Throws Fatal naming sandbox.hide_limit when more than `max_entries` entries would be looked
// at, or naming the mask limit: a run is refused rather than run with secrets unmasked.
MaskPlan plan_masks(const std::filesystem::path& workspace, const std::vector<std::string>& globs,
                    int64_t max_entries);

// Whether a git config file carries credentials (a URL with a password, a password, token or
// extraheader setting): then `.git/config` is masked like the rest.
bool git_config_holds_credentials(const std::filesystem::path& file);

// The empty, read-only file and directory the masks are made of, created on first use under
// sandshim's state directory.
struct MaskSources {
  std::filesystem::path empty_file;
  std::filesystem::path empty_dir;
};
MaskSources ensure_mask_sources();

// The plan's read-only binds, one per masked path.
std::vector<BindPath> mask_binds(const MaskPlan& plan, const MaskSources& sources);

}  // namespace sandshim::shim
