#include "run/git_stage.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include "common/dir_at.hpp"
#include "common/error.hpp"
#include "common/io.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "policy/reach.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

// git's state: what its porcelain writes at .git's top level and reads back as data.
constexpr std::array<std::string_view, 14> k_carried = {
    "HEAD",       "ORIG_HEAD",      "FETCH_HEAD",  "MERGE_HEAD",       "MERGE_MODE",
    "MERGE_MSG",  "AUTO_MERGE",     "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "SQUASH_MSG", "COMMIT_EDITMSG", "index",       "packed-refs"};

// The directories a run writes through: git's objects, refs (loose or reftable's) and reflogs,
// data git checks as it reads them. Every other directory (hooks, info, modules, worktrees, a
// rebase in progress on the host) stays read-only.
constexpr std::array<std::string_view, 4> k_writable_dirs = {"objects", "refs", "logs", "reftable"};

// The directories of .git a broker's stage shows (git's own; another name is not shown): the
// stage's entries are named after them, and none may name what the gate's directory holds.
constexpr std::array<std::string_view, 18> k_git_dirs = {
    "objects",  "refs",         "logs",      "reftable",  "hooks", "info",
    "branches", "rr-cache",     "modules",   "worktrees", "lfs",   "rebase-merge",
    "remotes",  "rebase-apply", "sequencer", "svn",       "annex", "filter-repo"};

// A .git the stage does not serve: the run keeps .git read-only, as before the stage.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr size_t k_shape_bytes = 64 * 1024;  // a ref file is far smaller; a longer one is not git's

GitStage::FileMark mark_at(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return {};
  }
  return {true, st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// Whether `path`'s inode changed (for a directory: an entry made, renamed or removed) at or
// after `since_s`, with a second of slack for the file system's coarse clock.
bool changed_since(const fs::path& path, int64_t since_s) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 || static_cast<int64_t>(st.st_ctim.tv_sec) >= since_s - 1;
}

bool is_regular_at(int dir, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

bool is_directory_at(int dir, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

UniqueFd open_directory(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    throw Fatal("cannot open " + quoted(path.string()) + ": " + std::strerror(errno));
  }
  return fd;
}

// A regular file NAME of dir `from` copied as a new file of dir `to`, owned by the run's user.
void copy_into_stage(int from, int to, const std::string& name, uid_t uid, gid_t gid) {
  UniqueFd in(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!in.valid() || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return;  // gone or replaced since it was listed: the run does without it
  }
  UniqueFd out(::openat(to, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        st.st_mode & 0777));
  if (!out.valid() || !copy_contents(in.get(), out.get())) {
    throw Fatal("cannot copy .git/" + name + " into the stage: " + std::strerror(errno));
  }
  if (::geteuid() == 0 && ::fchown(out.get(), uid, gid) != 0) {
    throw Fatal("cannot hand the stage's " + name +
                " to the sandbox user: " + std::strerror(errno));
  }
}

// A broker's copy of the caller's NAME: only a regular file of the caller's with one link (a
// link to a file the broker may read and the caller may not would hand it over), within what is
// left of `budget`; broker-owned, and written inside by the run's processes alone (its group).
void copy_callers_file(int from, int to, const std::string& name, uid_t caller, off_t& budget) {
  UniqueFd in(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!in.valid() || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return;  // gone or replaced since it was listed: the run does without it
  }
  if (st.st_uid != caller || st.st_nlink != 1) {
    throw Skip(".git/" + name + " is not the caller's own file");
  }
  if (st.st_size > budget) {
    throw Skip(".git's files are larger than a stage copies");
  }
  budget -= st.st_size;
  UniqueFd out(
      ::openat(to, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  // git rewrites some in place (COMMIT_EDITMSG, FETCH_HEAD): the run's processes (the broker's
  // group) write them too
  if (!out.valid() || ::fchmod(out.get(), 0660) != 0 || !copy_contents(in.get(), out.get())) {
    throw Fatal("cannot copy .git/" + name + " into the stage: " + std::strerror(errno));
  }
}

constexpr off_t k_broker_copy_bytes = off_t{256} << 20;  // an index of a few million files

// A stage set aside is renamed to NAME.abandoned-TIME-PID.
constexpr std::string_view k_set_aside_infix = ".abandoned-";

bool is_hex_id(const std::string& text) {
  static const std::regex id("[0-9a-f]{40}|[0-9a-f]{64}");
  return std::regex_match(text, id);
}

// Every line of TEXT (a last empty one aside) passes `line_ok`.
template <typename LineOk>
bool every_line(const std::string& text, LineOk line_ok) {
  std::vector<std::string> lines = split_lines(text);
  return !lines.empty() && std::all_of(lines.begin(), lines.end(), line_ok);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> global_git_identity(const fs::path& home) {
  std::map<std::string, std::string> found;
  for (const fs::path& file : {xdg_directory("config") / "git" / "config", home / ".gitconfig"}) {
    std::ifstream in(file);
    std::string section;
    for (std::string line; std::getline(in, line);) {
      line = trim(line);
      if (line.starts_with('[')) {
        section = ascii_lower(line.substr(1, line.find_first_of("] \t") - 1));
        continue;
      }
      size_t equals = line.find('=');
      if (section != "user" || equals == std::string::npos) {
        continue;
      }
      std::string key = ascii_lower(trim(line.substr(0, equals)));
      std::string value = trim(line.substr(equals + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      } else {
        value = trim(value.substr(0, value.find_first_of("#;")));
      }
      if ((key == "name" || key == "email") && !value.empty() && !has_control_characters(value)) {
        found["user." + key] = value;
      }
    }
  }
  return {found.begin(), found.end()};
}

bool GitStage::is_carried(const std::string& name) {
  return one_of(k_carried, name);
}

bool GitStage::has_git_shape(const std::string& name, const std::string& head_bytes) {
  if (name == "index") {
    return head_bytes.starts_with("DIRC");
  }
  if (name.ends_with("MSG") || name == "MERGE_MODE") {
    return true;  // text git offers as a message, never runs
  }
  if (name == "packed-refs") {  // complete lines only: the head may end mid-line
    std::string whole = head_bytes.substr(0, head_bytes.rfind('\n') + 1);
    return whole.empty() || every_line(whole, [](const std::string& line) {
             return line.starts_with('#') || line.starts_with('^') ||
                    is_hex_id(line.substr(0, line.find(' ')));
           });
  }
  if (head_bytes.size() > k_shape_bytes) {
    return false;
  }
  if (name == "HEAD") {
    static const std::regex symbolic("ref: refs/[A-Za-z0-9._/+-]+\n?");
    std::string line = head_bytes;
    return (std::regex_match(line, symbolic) && line.find("..") == std::string::npos) ||
           is_hex_id(trim(line));
  }
  if (name == "FETCH_HEAD") {
    return every_line(head_bytes, [](const std::string& line) {
      return line.find('\t') != std::string::npos && is_hex_id(line.substr(0, line.find('\t')));
    });
  }
  return every_line(head_bytes, [](const std::string& line) { return is_hex_id(line); });
}

fs::path git_stage_root() {
  return xdg_directory("state") / "sandshim" / "git-stage";
}

std::unique_ptr<GitStage> GitStage::open(const fs::path& workspace, uid_t uid, gid_t gid) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(workspace / ".git", ec))) {
    return nullptr;  // no repository here, or a worktree's .git file: .git stays read-only
  }
  std::unique_ptr<GitStage> stage(new GitStage());
  stage->m_workspace = workspace;
  stage->m_opened_s = static_cast<int64_t>(::time(nullptr));
  stage->m_dir =
      git_stage_root() / (sha256_hex(workspace.string()).substr(0, 16) + "-" + std::to_string(uid));
  try {
    fs::create_directories(stage->m_dir);
    note_workspace_of(stage->m_dir, workspace);
    fs::path lock = stage->m_dir.string() + ".lock";
    stage->m_lock.reset(::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!stage->m_lock.valid()) {
      throw Fatal("cannot open " + quoted(lock.string()) + ": " + std::strerror(errno));
    }
    if (::flock(stage->m_lock.get(), LOCK_EX | LOCK_NB) != 0) {
      spdlog::info("git stage: another run in this workspace holds it; .git stays read-only");
      return nullptr;
    }
    if (::geteuid() == 0 && ::chown(stage->m_dir.c_str(), uid, gid) != 0) {
      throw Fatal("cannot hand the stage to the sandbox user: " +
                  std::string(std::strerror(errno)));
    }
    fs::permissions(stage->m_dir, fs::perms::owner_all);
    stage->m_git = open_directory(workspace / ".git");
    stage->m_stage = open_directory(stage->m_dir);
    stage->fill(uid, gid);
  } catch (const Skip& skip) {
    spdlog::info("git stage: {}; .git stays read-only in this run", skip.what());
    return nullptr;
  } catch (const std::exception& e) {  // Fatal or filesystem_error: the run keeps .git read-only
    spdlog::warn("git stage: {}; .git stays read-only in this run", e.what());
    return nullptr;
  }
  return stage;
}

namespace {

// Stages an earlier run of this workspace set aside (its container might have outlived it): no
// run gets one again, so they go once this stage's lock is held. Each is emptied through
// descriptors, never following a link the run left there; one that cannot be emptied yet stays
// for the next time.
void remove_set_aside_stages(const fs::path& root, const std::string& stage_name) {
  try {
    UniqueFd dir = open_directory(root);
    for (const std::string& name : names_in(dir.get())) {
      if (name.starts_with(stage_name + std::string(k_set_aside_infix)) &&
          !remove_entry_at(dir.get(), name)) {
        spdlog::debug("git stage: {} cannot be removed yet", name);
      }
    }
  } catch (const Fatal& e) {
    spdlog::debug("git stage: set-aside stages not removed: {}", e.what());
  }
}

}  // namespace

std::unique_ptr<GitStage> GitStage::open_for_broker(int held_workspace, const fs::path& workspace,
                                                    uid_t caller) {
  UniqueFd git(::openat(held_workspace, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!git.valid() || ::fstat(git.get(), &st) != 0 || st.st_uid != caller) {
    return nullptr;  // no .git directory of the caller's: .git stays read-only
  }
  std::unique_ptr<GitStage> stage(new GitStage());
  stage->m_broker = true;
  stage->m_caller = caller;
  stage->m_workspace = workspace;
  stage->m_opened_s = static_cast<int64_t>(::time(nullptr));
  stage->m_git_id = dev_ino(git.get());
  stage->m_git = std::move(git);
  fs::path root = git_stage_root();
  stage->m_dir =
      root / (sha256_hex(workspace.string()).substr(0, 16) + "-" + std::to_string(caller));
  try {
    fs::create_directories(root);
    fs::permissions(root, fs::perms::owner_all);  // the stages are reached by the engine alone
    fs::create_directories(stage->m_dir);
    stage->m_lock.reset(::open((stage->m_dir.string() + ".lock").c_str(),
                               O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!stage->m_lock.valid() || ::flock(stage->m_lock.get(), LOCK_EX | LOCK_NB) != 0) {
      spdlog::info("git stage: another run in this workspace holds it; .git stays read-only");
      return nullptr;
    }
    remove_set_aside_stages(root, stage->m_dir.filename().string());
    // Writable by the broker's group, which the run's processes get and the caller's processes
    // on the host lack: through /proc/PID/root of a container of theirs (a warm one, or this
    // run's init before the gate runs) they could otherwise put a program where a link at .git
    // moves the stage, over the gate.
    fs::permissions(stage->m_dir, fs::perms::owner_all | fs::perms::group_all);
    stage->m_group = ::getegid();
    stage->m_stage = open_directory(stage->m_dir);
    stage->fill(caller, 0);
  } catch (const Skip& skip) {
    spdlog::info("git stage: {}; .git stays read-only in this run", skip.what());
    return nullptr;
  } catch (const std::exception& e) {
    spdlog::warn("git stage: {}; .git stays read-only in this run", e.what());
    return nullptr;
  }
  return stage;
}

// The stage as the run starts: the mount points of .git's directories (kept: a warm container
// holds binds on them), then a fresh copy of every top-level file.
void GitStage::fill(uid_t uid, gid_t gid) {
  std::vector<std::string> files;
  for (const std::string& name : names_in(m_git.get())) {
    if (is_directory_at(m_git.get(), name)) {
      m_subdirs.push_back(name);
    } else if (!is_regular_at(m_git.get(), name)) {  // a linked hooks or objects directory
      throw Skip(".git/" + name + " is a link or no regular file");
    } else if (!name.ends_with(".lock")) {
      files.push_back(name);
    }
  }
  if (m_broker) {
    std::erase_if(m_subdirs, [](const std::string& name) { return !one_of(k_git_dirs, name); });
  }
  empty_stage();
  m_identity = dev_ino(m_stage.get());
  m_binds.push_back(checked_bind(m_dir, m_workspace / ".git", false));
  for (const std::string& name : m_subdirs) {
    if (m_broker) {
      link_to_fixed_place(name);
    } else if (::mkdirat(m_stage.get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Fatal("cannot make the stage's " + name + ": " + std::strerror(errno));
    }
    fs::path target = m_broker ? fs::path(k_git_dirs_target) / name : m_workspace / ".git" / name;
    m_binds.push_back(
        checked_bind(m_workspace / ".git" / name, target, !one_of(k_writable_dirs, name)));
  }
  take_host_marks();  // before the copies: a host change while they are made is the host's
  off_t budget = k_broker_copy_bytes;
  for (const std::string& name : files) {
    if (m_broker) {
      copy_callers_file(m_git.get(), m_stage.get(), name, m_caller, budget);
    } else {
      copy_into_stage(m_git.get(), m_stage.get(), name, uid, gid);
    }
  }
  take_stage_marks();
}

// A broker's stage holds links to .git's directories, which the engine binds at a fixed place
// outside the workspace: bound over the stage, their targets would be resolved through the
// caller's .git wherever a link swapped in at .git moved the stage, and could land the caller's
// files over the gate.
void GitStage::link_to_fixed_place(const std::string& name) {
  std::string target = std::string(k_git_dirs_target) + "/" + name;
  if (::symlinkat(target.c_str(), m_stage.get(), name.c_str()) != 0) {
    throw Fatal("cannot link the stage's " + name + ": " + std::strerror(errno));
  }
}

// Everything but .git's directories' empty mount points goes (a warm container holds binds on
// them; a broker's stage has links instead, which go too). In a broker's stage what a run left
// there may be the caller's and unremovable: the broker then gives the stage up, and the next run
// gets a new one.
void GitStage::empty_stage() {
  bool emptied = true;
  for (const std::string& name : names_in(m_stage.get())) {
    bool mount_point = !m_broker &&
                       std::find(m_subdirs.begin(), m_subdirs.end(), name) != m_subdirs.end() &&
                       is_directory_at(m_stage.get(), name) && fs::is_empty(m_dir / name);
    if (!mount_point) {
      emptied = remove_entry_at(m_stage.get(), name) && emptied;
    }
  }
  if (!emptied) {
    if (m_broker) {
      set_aside();
    }
    throw Skip("the stage " + quoted(m_dir.string()) + " cannot be emptied");
  }
}

// What the host's carried files look like now: a later change is someone else's.
void GitStage::take_host_marks() {
  for (std::string_view name : k_carried) {
    m_host_marks[std::string(name)] = mark_at(m_git.get(), std::string(name));
  }
}

// What the stage's files look like now: a later change is the run's.
void GitStage::take_stage_marks() {
  m_stage_marks.clear();
  for (const std::string& name : names_in(m_stage.get())) {
    if (std::find(m_subdirs.begin(), m_subdirs.end(), name) == m_subdirs.end()) {
      m_stage_marks[name] = mark_at(m_stage.get(), name);
    }
  }
}

GitStage::~GitStage() {
  release();
}

void GitStage::release(bool container_may_live) {
  if (!m_stage.valid()) {
    return;
  }
  try {  // the copies go (an index may be large); the mount points stay for warm containers
    empty_stage();
    if (m_broker && container_may_live) {
      set_aside();
    }
  } catch (const std::exception& e) {
    spdlog::warn("git stage: cannot empty {}: {}", m_dir.string(), e.what());
  }
  m_stage.reset();
  m_lock.reset();
}

void GitStage::set_aside() const {
  fs::rename(m_dir, m_dir.string() + std::string(k_set_aside_infix) +
                        std::to_string(::time(nullptr)) + "-" + std::to_string(::getpid()));
}

std::vector<std::pair<std::string, std::string>> GitStage::environment(
    const std::vector<std::pair<std::string, std::string>>& identity) const {
  std::vector<std::pair<std::string, std::string>> config = {
      {"safe.directory", m_workspace.string()}};
  config.insert(config.end(), identity.begin(), identity.end());
  std::vector<std::pair<std::string, std::string>> env = {
      {"GIT_CONFIG_COUNT", std::to_string(config.size())}};
  for (size_t i = 0; i < config.size(); ++i) {
    env.emplace_back("GIT_CONFIG_KEY_" + std::to_string(i), config[i].first);
    env.emplace_back("GIT_CONFIG_VALUE_" + std::to_string(i), config[i].second);
  }
  return env;
}

namespace {

// The stage's NAME, opened once (never through a link) so the bytes judged are the bytes written;
// invalid unless a regular file.
UniqueFd open_staged(int stage, const std::string& name) {
  UniqueFd in(::openat(stage, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (in.valid() && (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode))) {
    in.reset();
  }
  return in;
}

std::string head_of(int fd) {
  std::string head(k_shape_bytes + 1, '\0');
  ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  head.resize(static_cast<size_t>(std::max<ssize_t>(got, 0)));
  return head;
}

bool has_shape_of(const std::string& name, int fd) {
  return GitStage::has_git_shape(name, head_of(fd));
}

// `in`'s content written into the host's .git as git writes NAME: NAME.lock, created only if
// absent (git on the host holds it otherwise), then renamed over NAME.
std::string write_like_git(int in, int git, const std::string& name) {
  struct stat host {};
  mode_t mode =
      ::fstatat(git, name.c_str(), &host, AT_SYMLINK_NOFOLLOW) == 0 ? host.st_mode & 0777 : 0644;
  std::string lock = name + ".lock";
  UniqueFd out(
      ::openat(git, lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!out.valid()) {
    return errno == EEXIST ? "git holds " + lock + " on the host" : std::strerror(errno);
  }
  if (!copy_contents(in, out.get()) || ::renameat(git, lock.c_str(), git, name.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlinkat(git, lock.c_str(), 0);
    return why;
  }
  return "";
}

}  // namespace

namespace {

// `in` (one of git's state files the run changed) to the host's .git when it has git's shape.
void carry_file(int in, int git, const std::string& name, GitCarry& carry) {
  if (in < 0 || !has_shape_of(name, in)) {
    carry.left_behind.push_back(name + " (not in git's shape)");
  } else if (std::string failed = write_like_git(in, git, name); !failed.empty()) {
    carry.kept.push_back(name + " (" + failed + ")");
  } else {
    carry.carried.push_back(name);
  }
}

// The run's NAME (`in`, invalid when it removed it) to the host's .git, unless the host's copy
// changed since the stage was filled (`host_mark`).
void carry_one(int in, int git, const std::string& name, const std::string& host_mark,
               GitCarry& carry) {
  if (mark_text(mark_at(git, name)) != host_mark) {
    carry.kept.push_back(name + " (changed on the host meanwhile)");
  } else if (in < 0) {
    ::unlinkat(git, name.c_str(), 0);
    carry.carried.push_back(name + " (removed)");
  } else {
    carry_file(in, git, name, carry);
  }
}

// git writes objects and refs by renaming a new file over the old, which replaces a link; it
// appends to a reflog through whatever the name leads to, and would block on a fifo or a
// device's endless bytes. Only regular files and directories stay in what the run wrote in place;
// a directory whose ctime (which no one can set back) is older than the run holds no new entry,
// so a large object store is not walked whole.
void remove_odd_entries(const fs::path& workspace, int64_t since_s, GitCarry& carry) {
  fs::path git = workspace / ".git";
  for (std::string_view dir : k_writable_dirs) {
    std::error_code ec;
    std::vector<fs::path> odd;
    for (auto it = fs::recursive_directory_iterator(git / dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      fs::file_status status = it->symlink_status(ec);
      if (!fs::is_regular_file(status) && !fs::is_directory(status)) {
        odd.push_back(it->path());
      } else if (fs::is_directory(status) && !changed_since(it->path(), since_s)) {
        it.disable_recursion_pending();  // no entry made, renamed or removed in it since
      }
    }
    for (const fs::path& path : odd) {
      if (fs::remove(path, ec)) {
        carry.removed.push_back(fs::relative(path, git, ec).string());
      }
    }
  }
}

}  // namespace

std::string mark_text(const GitStage::FileMark& mark) {
  if (!mark.exists) {
    return "";
  }
  return std::to_string(mark.ino) + ":" + std::to_string(mark.size) + ":" +
         std::to_string(mark.mtime_ns);
}

std::vector<std::pair<std::string, GitStage::FileMark>> GitStage::changed_names() const {
  std::set<std::string> names;
  for (const std::string& name : names_in(m_stage.get())) {
    names.insert(name);
  }
  for (const auto& [name, mark] : m_stage_marks) {
    names.insert(name);
  }
  std::vector<std::pair<std::string, FileMark>> changed;
  for (const std::string& name : names) {
    if (std::find(m_subdirs.begin(), m_subdirs.end(), name) != m_subdirs.end()) {
      continue;
    }
    FileMark now = mark_at(m_stage.get(), name);
    auto before = m_stage_marks.find(name);
    if (before == m_stage_marks.end() ? now.exists : !(now == before->second)) {
      changed.emplace_back(name, now);
    }
  }
  return changed;
}

GitCarry GitStage::carry_back() {
  GitCarry carry;
  if (!m_stage.valid()) {
    return carry;
  }
  for (const auto& [name, now] : changed_names()) {
    if (!is_carried(name)) {
      carry.left_behind.push_back(name);
      continue;
    }
    UniqueFd in = now.exists ? open_staged(m_stage.get(), name) : UniqueFd();
    if (now.exists && !in.valid()) {
      carry.left_behind.push_back(name + " (not in git's shape)");
      continue;
    }
    carry_one(in.get(), m_git.get(), name, mark_text(m_host_marks[name]), carry);
  }
  remove_odd_entries(m_workspace, m_opened_s, carry);
  take_host_marks();
  take_stage_marks();
  return carry;
}

HandedGit GitStage::hand_back() {
  HandedGit handed;
  handed.workspace = m_workspace;
  handed.git_id = m_git_id;
  if (!m_stage.valid()) {
    return handed;
  }
  for (const auto& [name, now] : changed_names()) {
    UniqueFd in = now.exists ? open_staged(m_stage.get(), name) : UniqueFd();
    if (!is_carried(name) || (now.exists && !in.valid())) {
      handed.left_behind.push_back(name);
    } else {
      handed.files.push_back({name, mark_text(m_host_marks[name]), std::move(in)});
    }
  }
  take_stage_marks();  // a warm attempt that ran nothing, then the cold run
  return handed;
}

GitCarry carry_handed(const HandedGit& handed, int64_t since_s) {
  GitCarry carry;
  carry.left_behind = handed.left_behind;
  fs::path git_path = handed.workspace / ".git";
  UniqueFd git(::open(git_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  bool same = git.valid() && dev_ino(git.get()) == handed.git_id;
  for (const HandedGitFile& file : handed.files) {
    struct stat st {};
    if (!same) {
      carry.kept.push_back(file.name + " (the host's .git was replaced meanwhile)");
    } else if (file.content.valid() &&
               (::fstat(file.content.get(), &st) != 0 || !S_ISREG(st.st_mode))) {
      carry.left_behind.push_back(file.name + " (not in git's shape)");
    } else {
      carry_one(file.content.get(), git.get(), file.name, file.host_mark, carry);
    }
  }
  if (same && !handed.empty()) {
    remove_odd_entries(handed.workspace, since_s, carry);
  }
  return carry;
}

std::string describe_handed(const HandedGit& handed) {
  std::vector<std::string> names;
  for (const HandedGitFile& file : handed.files) {
    names.push_back(file.name + (file.content.valid() ? "" : " (removed)"));
  }
  std::vector<std::string> parts;
  if (!names.empty()) {
    parts.push_back("handed to the caller to carry to the host's .git: " + join(names, ", "));
  }
  if (!handed.left_behind.empty()) {
    parts.push_back("left in the sandbox (such files steer git on the host): .git/" +
                    join(handed.left_behind, ", .git/"));
  }
  return parts.empty() ? "" : "git: " + join(parts, "; ");
}

std::string describe_carry(const GitCarry& carry) {
  std::vector<std::string> parts;
  if (!carry.carried.empty()) {
    parts.push_back("carried to the host's .git: " + join(carry.carried, ", "));
  }
  if (!carry.kept.empty()) {
    parts.push_back("not carried, the host's kept: " + join(carry.kept, ", "));
  }
  if (!carry.left_behind.empty()) {
    parts.push_back("left in the sandbox (such files steer git on the host): .git/" +
                    join(carry.left_behind, ", .git/"));
  }
  if (!carry.removed.empty()) {
    parts.push_back("removed from the host's .git (a link or fifo git would write through): " +
                    join(carry.removed, ", "));
  }
  return parts.empty() ? "" : "git: " + join(parts, "; ");
}

}  // namespace sandshim::shim
