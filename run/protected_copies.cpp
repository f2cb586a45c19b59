#include "run/protected_copies.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>

#include "common/dir_at.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "policy/reach.hpp"
#include "run/workspace_gate.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

constexpr off_t k_copy_bytes = off_t{16} << 20;  // agent settings and hook scripts are far smaller
constexpr int k_copy_entries = 4096;
constexpr int k_copy_depth = 16;
constexpr mode_t k_copied_file = 0444;  // never executable: over the gate, nothing runs
constexpr mode_t k_copied_directory = 0755;

struct Budget {
  off_t bytes = k_copy_bytes;
  int entries = k_copy_entries;
};

// One line for a name that cannot be copied; the run is refused with it.
Fatal uncopyable(const std::string& shown, const std::string& why) {
  return Fatal("sandbox.workspace = rw through the broker keeps the workspace's " + shown +
               " read-only with a copy of it, and " + why +
               ", or keep sandbox.workspace = ro; nothing ran");
}

// A copy brings the caller's own files, or ones every user may read under this name alone (a
// link to a file the broker may read and the caller may not would hand it over).
bool may_copy(const struct stat& st, uid_t caller) {
  return st.st_uid == caller || ((st.st_mode & S_IROTH) != 0 && st.st_nlink == 1);
}

// The open regular file `in` as NAME of `to` (replacing what is there, in place).
void copy_file(int in, const struct stat& st, int to, const std::string& name,
               const std::string& shown, uid_t caller, Budget& budget) {
  if (!may_copy(st, caller)) {
    throw uncopyable(shown, "its file is someone else's and not readable by all; make it yours");
  }
  if (st.st_size > budget.bytes) {
    throw uncopyable(shown, "it holds more than 16 MiB; make it smaller");
  }
  budget.bytes -= st.st_size;
  (void)::fchmodat(to, name.c_str(), 0600, 0);  // a copy of an earlier run: written in place
  UniqueFd out(
      ::openat(to, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid() || !copy_contents(in, out.get()) || ::fchmod(out.get(), k_copied_file) != 0) {
    throw Fatal("cannot copy the workspace's " + shown + ": " + std::strerror(errno));
  }
}

// Everything in the directory `from` into the empty directory `to`: directories and regular
// files; links (which could lead anywhere once the copy lands elsewhere) and special files are
// left out.
void copy_tree(int from, int to, const std::string& shown, uid_t caller, Budget& budget,
               int depth) {
  for (const std::string& name : names_in(from)) {
    std::string inner = shown + "/" + name;
    if (--budget.entries < 0) {
      throw uncopyable(shown, "it holds more than 4096 entries; make it smaller");
    }
    struct stat st {};
    if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;  // gone since it was listed
    }
    if (S_ISDIR(st.st_mode)) {
      if (depth >= k_copy_depth) {
        throw uncopyable(shown, "it is nested more than 16 deep; make it shallower");
      }
      UniqueFd sub(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid() || ::mkdirat(to, name.c_str(), k_copied_directory) != 0) {
        throw uncopyable(inner, std::string("the broker cannot copy it (") + std::strerror(errno) +
                                    "); make it readable by other users");
      }
      UniqueFd copy(::openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      copy_tree(sub.get(), copy.get(), inner, caller, budget, depth + 1);
      (void)::fchmod(copy.get(), k_copied_directory);
    } else if (S_ISREG(st.st_mode)) {
      UniqueFd in(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!in.valid() || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        throw uncopyable(inner, std::string("the broker cannot read it (") + std::strerror(errno) +
                                    "); make it readable by other users");
      }
      copy_file(in.get(), st, to, name, inner, caller, budget);
    } else {
      spdlog::debug("protected copies: {} left out (a link or special file)", inner);
    }
  }
}

// NAME's entry in the copies as an empty directory: one an earlier run made stays (a warm
// container holds a bind on it).
UniqueFd empty_directory_at(int dir, const std::string& name) {
  struct stat st {};
  bool reuse = ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
  if (!reuse && (!remove_entry_at(dir, name) || ::mkdirat(dir, name.c_str(), 0700) != 0)) {
    throw Fatal("cannot make the copy of the workspace's " + name + ": " + std::strerror(errno));
  }
  UniqueFd entry(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!entry.valid() || ::fchmod(entry.get(), 0700) != 0) {
    throw Fatal("cannot open the copy of the workspace's " + name + ": " + std::strerror(errno));
  }
  for (const std::string& inner : names_in(entry.get())) {
    if (!remove_entry_at(entry.get(), inner)) {
      throw Fatal("cannot empty the copy of the workspace's " + name);
    }
  }
  return entry;
}

// Copies what NAME leads to beneath the workspace into `dir`; false when it is a file another
// name was copied from (CLAUDE.md linked to AGENTS.md): the bind at that name covers both.
bool copy_name(int workspace, int dir, const std::string& name, uid_t caller, Budget& budget,
               std::set<std::string>& copied) {
  UniqueFd in = open_readable_beneath(workspace, name);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) {
    throw Fatal("cannot stat the workspace's " + name + ": " + std::strerror(errno));
  }
  if (!copied.insert(dev_ino(in.get())).second) {
    remove_entry_at(dir, name);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    UniqueFd entry = empty_directory_at(dir, name);
    copy_tree(in.get(), entry.get(), name, caller, budget, 1);
    (void)::fchmod(entry.get(), k_copied_directory);
  } else if (S_ISREG(st.st_mode)) {
    struct stat there {};
    if (::fstatat(dir, name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(there.st_mode)) {
      remove_entry_at(dir, name);
    }
    copy_file(in.get(), st, dir, name, name, caller, budget);
  } else {
    throw uncopyable(name, "it is neither a file nor a directory; remove it");
  }
  return true;
}

std::string workspace_key(const fs::path& workspace, uid_t caller) {
  return sha256_hex(workspace.string()).substr(0, 16) + "-" + std::to_string(caller);
}

// A run's own directory is KEY.run-RUN_ID beside KEY.run-RUN_ID.lock, which the run holds
// locked while it lasts: a lock that can be taken is a run that is over (its broker died before
// it could remove the directory).
constexpr std::string_view k_own_marker = ".run-";
constexpr std::string_view k_lock_suffix = ".lock";
constexpr std::string_view k_staging_prefix = ".making-";

// The lock of a run's own directory, made under a name no sweep looks at, locked, then given its
// own name: a sweep never finds it unlocked.
UniqueFd lock_own_directory(const fs::path& root, const std::string& own) {
  std::string staging = std::string(k_staging_prefix) + own;
  UniqueFd lock(
      ::open((root / staging).c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid() || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0 ||
      ::rename((root / staging).c_str(), (root / (own + std::string(k_lock_suffix))).c_str()) !=
          0) {
    throw Fatal("cannot lock " + quoted((root / own).string()) + ": " + std::strerror(errno));
  }
  return lock;
}

// Removes the own directories of runs that are over, and their locks.
void sweep_orphaned_directories(const fs::path& root) {
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) {
    return;
  }
  for (const std::string& name : names_in(dir.get())) {
    bool staging = name.starts_with(k_staging_prefix);
    if (!staging &&
        (name.find(k_own_marker) == std::string::npos || !name.ends_with(k_lock_suffix))) {
      continue;
    }
    UniqueFd lock(::openat(dir.get(), name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (!lock.valid() || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
      continue;  // its run goes on
    }
    if (staging) {  // a run that died before its lock had its name
      (void)::unlinkat(dir.get(), name.c_str(), 0);
      continue;
    }
    std::string own = name.substr(0, name.size() - k_lock_suffix.size());
    if (remove_entry_at(dir.get(), own)) {
      (void)::unlinkat(dir.get(), name.c_str(), 0);
      spdlog::info("protected copies: removed {} of a run that is over", own);
    }
  }
}

}  // namespace

fs::path protected_copies_root() {
  return xdg_directory("state") / "sandshim" / "protected";
}

std::unique_ptr<ProtectedCopies> ProtectedCopies::make(int held_workspace,
                                                       const fs::path& workspace, uid_t caller,
                                                       const std::string& run_id) {
  std::unique_ptr<ProtectedCopies> copies(new ProtectedCopies());
  fs::path root = protected_copies_root();
  std::string key = workspace_key(workspace, caller);
  std::error_code ec;
  fs::create_directories(root, ec);
  fs::permissions(root, fs::perms::owner_all, ec);  // reached by the engine alone
  copies->m_lock.reset(
      ::open((root / (key + ".lock")).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  bool shared = copies->m_lock.valid() && ::flock(copies->m_lock.get(), LOCK_EX | LOCK_NB) == 0;
  copies->m_own = !shared;  // another run of this workspace refreshes the shared one
  std::string own = key + std::string(k_own_marker) + run_id;
  copies->m_dir = root / (shared ? key : own);
  if (shared) {
    sweep_orphaned_directories(root);
  } else {
    copies->m_lock = lock_own_directory(root, own);
  }
  fs::create_directories(copies->m_dir, ec);
  if (ec) {
    throw Fatal("cannot make " + quoted(copies->m_dir.string()) + ": " + ec.message());
  }
  fs::permissions(copies->m_dir, fs::perms::owner_all, ec);
  if (shared) {
    note_workspace_of(copies->m_dir, workspace);  // `sandshim gc` removes it once that is gone
  }
  copies->refresh(held_workspace, workspace, caller);
  return copies;
}

void ProtectedCopies::refresh(int held_workspace, const fs::path& workspace, uid_t caller) {
  UniqueFd dir(::open(m_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) {
    throw Fatal("cannot open " + quoted(m_dir.string()) + ": " + std::strerror(errno));
  }
  std::vector<std::string> names = protected_names();
  struct stat git {};
  bool git_file =
      ::fstatat(held_workspace, ".git", &git, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(git.st_mode);
  if (!git_file) {
    std::erase(names, ".git");  // a directory is the git stage's (a worktree's file is copied)
  }
  for (const std::string& stale : names_in(dir.get())) {
    if (std::find(names.begin(), names.end(), stale) == names.end()) {
      remove_entry_at(dir.get(), stale);
    }
  }
  Budget budget;
  std::set<std::string> copied;
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(held_workspace, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) {  // it might be there: it could not be kept read-only
        throw Fatal("cannot look into " + quoted(workspace.string()) + " (" + std::strerror(errno) +
                    ") to keep its " + name + " read-only; nothing ran");
      }
      remove_entry_at(dir.get(), name);
      continue;
    }
    if (!copy_name(held_workspace, dir.get(), name, caller, budget, copied)) {
      continue;
    }
    UniqueFd entry(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    m_binds.push_back(checked_bind(m_dir / name, workspace / name, true));
    m_identities.emplace_back(workspace / name, dev_ino(entry.get()));
  }
}

ProtectedCopies::~ProtectedCopies() {
  release();
}

void ProtectedCopies::release() {
  if (!m_own) {
    m_lock.reset();
    return;
  }
  m_own = false;
  std::string own = m_dir.filename().string();
  UniqueFd root(::open(m_dir.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid() || !remove_entry_at(root.get(), own)) {
    spdlog::warn("protected copies: cannot remove {}", m_dir.string());
  } else {  // still locked: a sweep meanwhile leaves it alone
    (void)::unlinkat(root.get(), (own + std::string(k_lock_suffix)).c_str(), 0);
  }
  m_lock.reset();
}

}  // namespace sandshim::shim
