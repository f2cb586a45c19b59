#include "policy/reach.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "policy/known_agents.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

// The agents' names (policy/known_agents.hpp) among the others: their dot-entries after
// .sandshim.conf, their other files (CLAUDE.md) before AGENTS.md.
std::vector<std::string> protected_names() {
  std::vector<std::string> names = {".git", ".sandshim.conf"};
  std::vector<std::string> files;
  for (const KnownAgent& agent : known_agents()) {
    for (const std::string& name : agent.workspace_names) {
      (name.starts_with('.') ? names : files).push_back(name);
    }
  }
  for (const char* name : {".vscode", ".husky", ".githooks", ".pre-commit-config.yaml", ".envrc"}) {
    names.emplace_back(name);
  }
  names.insert(names.end(), files.begin(), files.end());
  names.emplace_back("AGENTS.md");
  return names;
}

std::string invalid_writable_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path == "." || path == "./") {
    return "expected a sub-path of the workspace such as node_modules (never the workspace "
           "itself)";
  }
  fs::path p = fs::path(path).lexically_normal();
  for (const auto& part : p) {
    if (part == "..") {
      return "a writable path may not reach above the workspace";
    }
    const std::vector<std::string> names = protected_names();
    if (std::find(names.begin(), names.end(), part.string()) != names.end()) {
      return quoted(part.string()) + " always stays read-only";
    }
  }
  return "";
}

std::vector<BindPath> writable_binds(const fs::path& workspace, int workspace_fd,
                                     const std::vector<std::string>& paths) {
  std::vector<BindPath> binds;
  for (const auto& path : paths) {
    fs::path relative = fs::path(path).lexically_normal();
    fs::path dir = workspace / relative;
    UniqueFd dir_fd(
        ::openat(workspace_fd, relative.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir_fd.valid()) {
      throw Fatal("sandbox.writable = " + path + ": " + quoted(dir.string()) +
                  " is not a directory in the workspace; create it first");
    }
    binds.push_back(checked_bind(dir, dir, false));
    std::vector<BindPath> kept = protected_binds(dir, dir_fd.get());
    binds.insert(binds.end(), kept.begin(), kept.end());
  }
  return binds;
}

namespace {

// 0 when NAME is in the directory `dir_fd` (not following a link), else the lookup's errno.
int lookup_error(int dir_fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
}

}  // namespace

std::vector<std::string> absent_protected_names(int dir_fd) {
  std::vector<std::string> absent;
  for (const auto& name : protected_names()) {
    if (lookup_error(dir_fd, name) == ENOENT) {
      absent.push_back(name);
    }
  }
  return absent;
}

std::optional<ProtectedLink> protected_link_at(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) {
    return std::nullopt;
  }
  std::string text(static_cast<size_t>(st.st_size) + 1, '\0');
  ssize_t got = ::readlinkat(dir_fd, name.c_str(), text.data(), text.size());
  if (got < 0 || static_cast<size_t>(got) >= text.size()) {
    return std::nullopt;  // changed while read
  }
  text.resize(static_cast<size_t>(got));
  return ProtectedLink{name, st.st_ino, text};
}

std::vector<ProtectedLink> protected_links(int dir_fd) {
  std::vector<ProtectedLink> links;
  for (const auto& name : protected_names()) {
    if (auto link = protected_link_at(dir_fd, name)) {
      links.push_back(*link);
    }
  }
  return links;
}

std::string aside_name(const std::string& name, const std::string& run_id) {
  return name + ".sandshim-" + run_id;
}

std::vector<std::string> move_created_aside(const fs::path& workspace, const std::string& run_id,
                                            const std::vector<std::string>& names) {
  const std::vector<std::string>& known = protected_names();
  std::vector<std::string> lines;
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      continue;
    }
    std::string aside = aside_name(name, run_id);
    std::error_code ec;
    fs::rename(workspace / name, workspace / aside, ec);
    lines.push_back(!ec ? "created " + name + ", moved to " + aside
                        : "created " + name + " (left in place: remove it)");
  }
  return lines;
}

std::vector<std::string> restore_protected_links(const fs::path& workspace,
                                                 const std::vector<ProtectedLink>& links) {
  const std::vector<std::string>& known = protected_names();
  std::vector<std::string> lines;
  for (const ProtectedLink& link : links) {
    if (std::find(known.begin(), known.end(), link.name) == known.end()) {
      continue;
    }
    std::string removed = "removed the link " + link.name + " -> " + link.text;
    std::error_code ec;
    fs::create_symlink(link.text, workspace / link.name, ec);
    lines.push_back(!ec ? removed + ", made again"
                        : removed + " (not made again: " + ec.message() + ")");
  }
  return lines;
}

std::string created_names_summary(const std::vector<std::string>& lines) {
  return "sandbox.workspace = rw: the run " + join(lines, ", ");
}

std::vector<BindPath> protected_binds(const fs::path& dir, int dir_fd) {
  std::vector<BindPath> binds;
  for (const auto& name : protected_names()) {
    int error = lookup_error(dir_fd, name);
    if (error == 0) {
      binds.push_back(checked_bind(dir / name, dir / name, true));
    } else if (error != ENOENT) {  // it might be there: it could not be kept read-only
      throw Fatal("cannot look into " + quoted(dir.string()) + " (" + std::strerror(error) +
                  ") to keep its " + name +
                  " read-only; make the directory searchable (chmod a+x), or keep it out of "
                  "sandbox.writable");
    }
  }
  return binds;
}

namespace {

uint64_t tree_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      total += it->file_size(ec);
    }
  }
  return total;
}

void empty_directory(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    fs::remove_all(entry.path(), ec);
  }
}

fs::path cache_root() {
  return xdg_directory("state") / "sandshim" / "cache";
}

}  // namespace

fs::path prepare_cache_dir(const fs::path& workspace, uid_t uid, gid_t gid, uint64_t max_bytes,
                           bool& emptied) {
  fs::path dir =
      cache_root() / (sha256_hex(workspace.string()).substr(0, 16) + "-" + std::to_string(uid));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Fatal("sandbox.cache: cannot create " + quoted(dir.string()) + ": " + ec.message());
  }
  note_workspace_of(dir, workspace);
  if (::geteuid() == 0 && ::chown(dir.c_str(), uid, gid) != 0) {
    throw Fatal("sandbox.cache: chown " + quoted(dir.string()) + ": " + std::strerror(errno));
  }
  fs::permissions(dir, fs::perms::owner_all, ec);
  emptied = tree_bytes(dir) > max_bytes;
  if (emptied) {
    empty_directory(dir);
  }
  return dir;
}

std::vector<std::string> cache_environment() {
  std::string root = k_cache_mount;
  return {"XDG_CACHE_HOME=" + root + "/xdg", "PIP_CACHE_DIR=" + root + "/pip",
          "npm_config_cache=" + root + "/npm", "PYTHONPYCACHEPREFIX=" + root + "/pycache"};
}

void note_workspace_of(const fs::path& dir, const fs::path& workspace) {
  std::ofstream(dir.parent_path() / (dir.filename().string() + ".workspace")) << workspace.string();
}

int remove_dirs_of_removed_workspaces(const fs::path& root) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.path().extension() != ".workspace") {
      continue;
    }
    std::ifstream in(entry.path());
    std::string workspace;
    std::getline(in, workspace);
    if (!workspace.empty() && fs::exists(workspace, ec)) {
      continue;
    }
    fs::path dir = entry.path();
    dir.replace_extension();
    fs::remove_all(dir, ec);
    fs::remove(entry.path(), ec);
    fs::remove(dir.string() + ".lock", ec);
    ++removed;
  }
  return removed;
}

int collect_cache_garbage() {
  return remove_dirs_of_removed_workspaces(cache_root());
}

}  // namespace sandshim::shim
