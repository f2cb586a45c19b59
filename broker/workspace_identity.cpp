#include "broker/workspace_identity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "broker/settings.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "policy/workspace.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

fs::path path_of_fd(int fd) {
  std::error_code ec;
  fs::path path = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
  if (ec || !path.is_absolute() || path.native().ends_with(" (deleted)")) {
    throw Fatal("the current directory was removed or cannot be named; cd into your project");
  }
  return path;
}

// Walks the path from / one component at a time without following any symlink; the
// directory it ends at, or Fatal naming the component that is a symlink or cannot be opened.
UniqueFd open_without_symlinks(const fs::path& path) {
  UniqueFd current(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  fs::path reached = path.root_path();
  for (const auto& part : path.relative_path()) {
    UniqueFd next(::openat(current.get(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid() && errno == EACCES) {
      throw Fatal("the broker cannot reach the workspace " + quoted(path.string()) + ": " +
                  quoted(reached.string()) +
                  " is not searchable by other users; make it so (`chmod o+x DIR` on it and each "
                  "directory above) or work in another directory; nothing ran");
    }
    struct stat st {};
    if (!next.valid() || ::fstat(next.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw Fatal("the workspace path " + quoted(path.string()) + " changed (" +
                  quoted(part.string()) +
                  " was renamed or replaced by a symlink) between the caller's request and the "
                  "broker's check; refusing it; nothing ran");
    }
    current = std::move(next);
    reached /= part;
  }
  return current;
}

void refuse_system_directory(const fs::path& path, const char* what) {
  if (is_system_directory(path)) {
    throw Fatal("refusing " + quoted(path.string()) + " as the " + what +
                ": system directories (/run, /var/run, /proc, /sys, /dev) are never a "
                "workspace; run from a project directory; nothing ran");
  }
}

void refuse_engine_sockets(const fs::path& workspace, const std::vector<fs::path>& sockets) {
  for (const auto& socket : sockets) {
    if (is_within(socket, workspace)) {
      throw Fatal("refusing " + quoted(workspace.string()) +
                  " as the workspace: it holds the engine socket " + quoted(socket.string()) +
                  "; run from a project directory; nothing ran");
    }
  }
}

}  // namespace

bool same_directory(int a, int b) {
  struct stat sa {};
  struct stat sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

bool is_system_directory(const fs::path& path) {
  for (const char* dir : {"/run", "/var/run", "/proc", "/sys", "/dev"}) {
    if (is_within(path, dir)) {
      return true;
    }
  }
  return false;
}

std::vector<fs::path> engine_socket_paths() {
  std::vector<fs::path> sockets = {"/var/run/docker.sock", "/run/docker.sock",
                                   "/run/podman/podman.sock", "/run/containerd/containerd.sock",
                                   k_default_socket};
  if (auto host = environment::docker_host()) {
    std::string endpoint = *host;
    if (endpoint.starts_with("unix://")) {
      sockets.emplace_back(endpoint.substr(7));
    }
  }
  return sockets;
}

fs::path admit_cwd(int cwd_fd, const fs::path& stated, const fs::path& caller_home,
                   const std::vector<fs::path>& sockets) {
  fs::path cwd = path_of_fd(cwd_fd);
  if (cwd != stated) {
    throw Fatal("the workspace " + quoted(stated.string()) +
                " changed (renamed or replaced) after the caller opened it; it is now " +
                quoted(cwd.string()) + "; refusing it; nothing ran");
  }
  refuse_system_directory(cwd, "current directory");
  fs::path workspace = shim::resolve_workspace(cwd, caller_home);
  refuse_system_directory(workspace, "workspace");
  refuse_engine_sockets(workspace, sockets);
  UniqueFd by_name = open_without_symlinks(cwd);
  if (!same_directory(by_name.get(), cwd_fd)) {
    throw Fatal("the workspace path " + quoted(cwd.string()) +
                " now names another directory than the caller's (renamed or replaced); "
                "refusing it; nothing ran");
  }
  return cwd;
}

}  // namespace sandshim::broker
