#include "run/workspace_gate.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
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
std::string ancestor_identity(int cwd_fd, size_t depth) {
  UniqueFd current(::fcntl(cwd_fd, F_DUPFD_CLOEXEC, 3));
  for (size_t i = 0; i < depth; ++i) {
    UniqueFd parent(::openat(current.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent.valid()) {
      throw Fatal(std::string("cannot open a parent of the caller's directory: ") +
                  std::strerror(errno));
    }
    current = std::move(parent);
  }
  return identity_of(current.get());
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
  UniqueFd held(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!held.valid()) {
    throw Fatal(std::string("cannot open the caller's directory: ") + std::strerror(errno));
  }
  gate.cwd_id = identity_of(held.get());
  gate.workspace_id = ancestor_identity(held.get(), depth_below(cwd, workspace));
  return gate;
}

std::vector<std::string> gate_prefix(const WorkspaceGate& gate, const fs::path& workspace) {
  return {workspace.string(), gate.workspace_id, gate.cwd_id, "--"};
}

}  // namespace sandshim::shim
