#include "run/workspace_gate.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/io.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

std::string identity_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw Fatal(std::string("cannot stat the caller's directory: ") + std::strerror(errno));
  }
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

size_t depth_below(const fs::path& cwd, const fs::path& workspace) {
  if (!is_within(cwd, workspace)) {
    throw Fatal("the current directory " + quoted(cwd.string()) + " is not in the workspace " +
                quoted(workspace.string()));
  }
  size_t depth = 0;
  for (const auto& part : cwd.lexically_relative(workspace)) {
    depth += part != "." ? 1 : 0;
  }
  return depth;
}

// The workspace as an ancestor of the held directory: `..` follows the directory itself,
// not a name that could have been swapped.
UniqueFd ancestor_of(int cwd_fd, size_t depth) {
  UniqueFd current(::fcntl(cwd_fd, F_DUPFD_CLOEXEC, 3));
  for (size_t i = 0; i < depth; ++i) {
    UniqueFd parent(::openat(current.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent.valid()) {
      throw Fatal(std::string("cannot open a parent of the caller's directory: ") +
                  std::strerror(errno));
    }
    current = std::move(parent);
  }
  return current;
}

// What `relative` leads to in the workspace, never out of it: -1 with errno EXDEV (or ELOOP)
// for a link that leaves it.
int open_beneath(int workspace_fd, const fs::path& relative) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(retry_on_eintr(
      [&] { return ::syscall(SYS_openat2, workspace_fd, relative.c_str(), &how, sizeof how); }));
}

// Why `relative` (whose open beneath the workspace failed with `error`) cannot be bound.
std::string not_beneath(int workspace_fd, const fs::path& relative, int error) {
  std::string name = "the workspace's " + relative.string();
  struct stat st {};
  bool is_link = ::fstatat(workspace_fd, relative.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISLNK(st.st_mode);
  if (error == ENOENT) {
    return is_link ? name +
                         " is a link to nothing; the run cannot keep it read-only: remove the "
                         "link or make what it names; nothing ran"
                   : name + " went away while the run started; retry; nothing ran";
  }
  if (error == EXDEV || error == ELOOP) {
    return name +
           " leads out of the workspace (a symbolic link); the engine would mount what it "
           "points to, so the run is refused: replace the link with what it points to, or keep "
           "sandbox.workspace = ro; nothing ran";
  }
  return name + " cannot be checked (" + std::strerror(error) +
         "); make its directories searchable by other users, or keep sandbox.workspace = ro; "
         "nothing ran";
}

}  // namespace

UniqueFd open_readable_beneath(int workspace_fd, const fs::path& relative) {
  open_how how{};
  how.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;  // a fifo does not block the open
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(static_cast<int>(retry_on_eintr(
      [&] { return ::syscall(SYS_openat2, workspace_fd, relative.c_str(), &how, sizeof how); })));
  if (!fd.valid()) {
    throw Fatal(not_beneath(workspace_fd, relative, errno));
  }
  return fd;
}

namespace {

UniqueFd open_held_cwd() {
  UniqueFd held(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!held.valid()) {
    throw Fatal(std::string("cannot open the caller's directory: ") + std::strerror(errno));
  }
  return held;
}

// Only root or the broker's own user may be able to change the gate.
void require_trusted_binary(const fs::path& binary) {
  struct stat st {};
  if (::stat(binary.c_str(), &st) != 0) {
    throw Fatal("the workspace gate " + quoted(binary.string()) +
                " is missing; reinstall sandshim (the broker mounts it into every container)");
  }
  bool owner_ok = st.st_uid == 0 || st.st_uid == ::geteuid();
  if (!owner_ok || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || !S_ISREG(st.st_mode)) {
    throw Fatal("the workspace gate " + quoted(binary.string()) +
                " could be changed by another user; make it owned by root and not group or "
                "world writable");
  }
}

// Beside the executable in a build tree, in libexec beside bin when installed.
fs::path gate_binary() {
  fs::path dir = self_executable().parent_path();
  fs::path beside = dir / "sandshim-gate";
  std::error_code ec;
  if (fs::exists(beside, ec)) {
    return beside;
  }
  return (dir / ".." / "libexec" / "sandshim" / "sandshim-gate").lexically_normal();
}

}  // namespace

WorkspaceGate gate_for_held_cwd(const fs::path& workspace, const fs::path& cwd) {
  WorkspaceGate gate;
  gate.binary = gate_binary();
  require_trusted_binary(gate.binary);
  UniqueFd held = open_held_cwd();
  gate.cwd_id = identity_of(held.get());
  gate.workspace_id = identity_of(ancestor_of(held.get(), depth_below(cwd, workspace)).get());
  return gate;
}

UniqueFd open_held_workspace(const fs::path& workspace, const fs::path& cwd) {
  return ancestor_of(open_held_cwd().get(), depth_below(cwd, workspace));
}

std::vector<std::pair<fs::path, std::string>> binds_beneath(int workspace_fd,
                                                            const fs::path& workspace,
                                                            const std::vector<BindPath>& binds) {
  std::vector<std::pair<fs::path, std::string>> found;
  for (const BindPath& bind : binds) {
    // mounted by name at the same path, or (a broker's .git directories) at a fixed place
    bool by_name = bind.source == bind.target && is_within(bind.target, workspace);
    bool fixed_place = is_within(bind.source, workspace) && !is_within(bind.target, workspace);
    if (!by_name && !fixed_place) {
      continue;
    }
    fs::path relative = bind.source.lexically_relative(workspace);
    UniqueFd entry(open_beneath(workspace_fd, relative));
    if (!entry.valid()) {
      throw Fatal(not_beneath(workspace_fd, relative, errno));
    }
    found.emplace_back(bind.target, identity_of(entry.get()));
  }
  return found;
}

std::vector<std::string> gate_prefix(const WorkspaceGate& gate, const fs::path& workspace) {
  std::vector<std::string> prefix = {workspace.string(), gate.workspace_id, gate.cwd_id};
  for (const auto& [target, identity] : gate.binds) {
    prefix.push_back(target.string());
    prefix.push_back(identity);
  }
  prefix.emplace_back("--");
  return prefix;
}

}  // namespace sandshim::shim
