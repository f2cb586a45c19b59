#include "policy/masks.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>

#include "common/error.hpp"
#include "common/glob.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "policy/environment.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

const std::vector<std::string>& default_hide_globs() {
  static const std::vector<std::string> globs = {".env",      ".env.*",  "*.pem",
                                                 "*.key",     "id_rsa*", "id_ed25519*",
                                                 "id_ecdsa*", ".netrc",  ".git-credentials",
                                                 ".npmrc",    ".pypirc", ".aws/",
                                                 ".ssh/",     ".gnupg/", "credentials.json",
                                                 "*.kdbx"};
  return globs;
}

std::vector<std::string> effective_hide_globs(const std::vector<std::string>& added,
                                              const std::vector<std::string>& removed) {
  std::vector<std::string> globs;
  for (const auto* list : {&default_hide_globs(), &added}) {
    for (const auto& glob : *list) {
      bool kept = std::find(removed.begin(), removed.end(), glob) == removed.end();
      if (kept && std::find(globs.begin(), globs.end(), glob) == globs.end()) {
        globs.push_back(glob);
      }
    }
  }
  return globs;
}

std::string invalid_hide_glob(const std::string& glob) {
  if (glob.empty() || glob == "/" || glob.front() == '/') {
    return "expected a glob relative to the workspace, such as .env or secrets/";
  }
  if (glob == ".." || glob.starts_with("../") || glob.find("/../") != std::string::npos) {
    return "a glob may not reach above the workspace";
  }
  return "";
}

namespace {

// One glob, prepared: whether it wants directories only and whether it matches whole paths.
struct HideGlob {
  std::string text;     // as written, for the audit
  std::string pattern;  // without the trailing `/`
  bool directories_only = false;
  bool whole_path = false;
};

std::vector<HideGlob> prepare(const std::vector<std::string>& globs) {
  std::vector<HideGlob> prepared;
  for (const auto& glob : globs) {
    HideGlob g{glob, glob};
    while (g.pattern.size() > 1 && g.pattern.back() == '/') {
      g.pattern.pop_back();
      g.directories_only = true;
    }
    g.whole_path = g.pattern.find('/') != std::string::npos;
    prepared.push_back(std::move(g));
  }
  return prepared;
}

// The first glob matching an entry, or null.
const HideGlob* matching_glob(const std::vector<HideGlob>& globs, const std::string& name,
                              const std::string& relative, bool directory) {
  for (const auto& g : globs) {
    if (g.directories_only && !directory) {
      continue;
    }
    if (glob_match(g.pattern, g.whole_path ? relative : name, GlobCase::sensitive)) {
      return &g;
    }
  }
  return nullptr;
}

class Walk {
 public:
  Walk(fs::path root, const std::vector<std::string>& globs, int64_t max_entries)
      : m_root(std::move(root)), m_globs(prepare(globs)), m_max_entries(max_entries) {}

  MaskPlan run() {
    visit_directory(m_root, "");
    check_git_config();
    m_plan.matched_globs.assign(m_matched.begin(), m_matched.end());
    return std::move(m_plan);
  }

 private:
  void count_entry() {
    if (++m_plan.scanned > m_max_entries) {
      throw Fatal("the workspace " + quoted(m_root.string()) + " has more than " +
                  std::to_string(m_max_entries) +
                  " entries to search for sandbox.hide (sandbox.hide_limit = " +
                  std::to_string(m_max_entries) +
                  "); raise sandbox.hide_limit in ~/.config/sandshim/config, or run from a "
                  "smaller workspace");
    }
  }

  void add_mask(const fs::path& path, bool directory, const std::string& glob) {
    if (m_plan.paths.size() >= k_max_masked_paths) {
      throw Fatal("sandbox.hide matches more than " + std::to_string(k_max_masked_paths) +
                  " paths in " + quoted(m_root.string()) +
                  "; hide their directory instead (a glob ending in /)");
    }
    m_plan.paths.push_back({path, directory});
    m_matched.insert(glob);
  }

  // A matching symlink: its target is masked when it lies inside the workspace (outside, the
  // sandbox cannot see it anyway).
  void mask_symlink_target(const fs::path& link, const std::string& glob) {
    std::error_code ec;
    fs::path target = fs::canonical(link, ec);
    if (ec || !is_within(target, m_root)) {
      return;
    }
    add_mask(target, fs::is_directory(target, ec), glob);
  }

  void visit_entry(const fs::path& dir, const std::string& relative_dir, const dirent& entry) {
    std::string name = entry.d_name;
    if (name == "." || name == "..") {
      return;
    }
    count_entry();
    fs::path path = dir / name;
    unsigned char type = entry.d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      type = ::lstat(path.c_str(), &st) != 0 ? DT_UNKNOWN
             : S_ISDIR(st.st_mode)           ? DT_DIR
             : S_ISLNK(st.st_mode)           ? DT_LNK
                                             : DT_REG;
    }
    std::string relative = relative_dir.empty() ? name : relative_dir + "/" + name;
    bool directory = type == DT_DIR;
    if (const HideGlob* g = matching_glob(m_globs, name, relative, directory || type == DT_LNK)) {
      if (type == DT_LNK) {
        mask_symlink_target(path, g->text);
      } else {
        add_mask(path, directory, g->text);
      }
      return;
    }
    if (directory && name != ".git") {
      visit_directory(path, relative);
    }
  }

  void visit_directory(const fs::path& dir, const std::string& relative) {
    UniqueDir handle(::opendir(dir.c_str()));
    if (!handle) {
      if (errno == EACCES) {
        return;  // the sandbox user cannot read it either
      }
      throw Fatal("sandbox.hide: cannot read " + quoted(dir.string()) +
                  ": opendir: " + std::strerror(errno));
    }
    while (const dirent* entry = ::readdir(handle.get())) {
      visit_entry(dir, relative, *entry);
    }
  }

  void check_git_config() {
    fs::path config = m_root / ".git" / "config";
    std::error_code ec;
    if (fs::is_regular_file(config, ec) && git_config_holds_credentials(config)) {
      add_mask(config, false, ".git/config (credentials)");
    }
  }

  fs::path m_root;
  std::vector<HideGlob> m_globs;
  int64_t m_max_entries;
  MaskPlan m_plan;
  std::set<std::string> m_matched;
};

bool credential_setting(const std::string& line) {
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string key = trim(lower.substr(0, lower.find('=')));
  return lower.find('=') != std::string::npos &&
         (key == "password" || key == "token" || key == "extraheader" || key.ends_with("token"));
}

void write_empty_file(const fs::path& file) {
  std::error_code ec;
  if (fs::exists(file, ec)) {
    return;
  }
  std::ofstream out(file);
  if (!out) {
    throw Fatal("cannot create " + quoted(file.string()) +
                " for sandbox.hide: " + std::strerror(errno));
  }
  out.close();
  fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
}

}  // namespace

MaskPlan plan_masks(const fs::path& workspace, const std::vector<std::string>& globs,
                    int64_t max_entries) {
  return Walk(workspace, globs, max_entries).run();
}

bool git_config_holds_credentials(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (holds_url_credentials(line) || credential_setting(line)) {
      return true;
    }
  }
  return false;
}

MaskSources ensure_mask_sources() {
  fs::path dir = xdg_directory("state") / "sandshim" / "masks";
  MaskSources sources{dir / "empty", dir / "empty.d"};
  std::error_code ec;
  fs::create_directories(sources.empty_dir, ec);
  if (ec) {
    throw Fatal("cannot create " + quoted(sources.empty_dir.string()) +
                " for sandbox.hide: " + ec.message());
  }
  fs::permissions(sources.empty_dir,
                  fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                      fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec,
                  ec);
  write_empty_file(sources.empty_file);
  return sources;
}

std::vector<BindPath> mask_binds(const MaskPlan& plan, const MaskSources& sources) {
  std::vector<BindPath> binds;
  for (const auto& masked : plan.paths) {
    const fs::path& source = masked.directory ? sources.empty_dir : sources.empty_file;
    binds.push_back(checked_bind(source, masked.path, true));
  }
  return binds;
}

}  // namespace sandshim::shim
