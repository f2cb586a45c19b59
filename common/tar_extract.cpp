#include "common/tar_extract.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/io.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::tar {

namespace {

int open_beneath(int root, const std::string& path, uint64_t flags, uint64_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC | O_NOFOLLOW;
  how.mode = mode;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
}

// The entry's path below `top` ("" for `top` itself); nullopt-like "\x01" when outside it.
bool relative_to_top(const std::string& path, const std::string& top, std::string& relative) {
  if (path == top) {
    relative.clear();
    return true;
  }
  if (path.size() > top.size() + 1 && path.starts_with(top) && path[top.size()] == '/') {
    relative = path.substr(top.size() + 1);
    return true;
  }
  return false;
}

std::string check(const std::vector<Entry>& entries, const std::string& top) {
  for (const auto& entry : entries) {
    // The archive comes from a container: its names are quoted with their controls escaped.
    std::string path = quoted(entry.path);
    if (auto why = unsafe_path(entry.path)) {
      return *why + ": " + path;
    }
    if (entry.kind == Kind::symlink || entry.kind == Kind::hardlink) {
      return "a link: " + path + " -> " + quoted(entry.link);
    }
    if (entry.kind == Kind::other) {
      return "neither a file nor a directory: " + path;
    }
    std::string relative;
    if (!relative_to_top(entry.path, top, relative)) {
      return "a path outside " + quoted(top) + ": " + path;
    }
    if (relative.empty() && entry.kind != Kind::directory) {
      return "not a directory: " + path;
    }
  }
  return "";
}

std::string system_error(const char* call, const std::string& path) {
  return std::string(call) + " " + quoted(path) + ": " + std::strerror(errno);
}

// mkdirat in the parent opened beneath the root: a name with slashes would follow links.
std::string write_directory(int root, const std::string& relative, Extracted& result) {
  size_t slash = relative.rfind('/');
  UniqueFd parent(open_beneath(root, slash == std::string::npos ? "." : relative.substr(0, slash),
                               O_DIRECTORY | O_PATH));
  if (!parent.valid()) {
    return system_error("open", relative);
  }
  std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  if (::mkdirat(parent.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    return system_error("mkdir", relative);
  }
  UniqueFd dir(open_beneath(root, relative, O_DIRECTORY | O_PATH));
  if (!dir.valid()) {
    return system_error("open", relative);
  }
  ++result.directories;
  return "";
}

std::string write_file(int root, const Entry& entry, const std::string& relative,
                       Extracted& result) {
  UniqueFd file(open_beneath(root, relative, O_WRONLY | O_CREAT | O_TRUNC,
                             (entry.mode & 0111) != 0 ? 0755 : 0644));
  if (!file.valid()) {
    return system_error("open", relative);
  }
  if (!write_all(file.get(), entry.data)) {
    return system_error("write", relative);
  }
  ++result.files;
  result.bytes += entry.data.size();
  return "";
}

}  // namespace

Extracted extract_beneath(const std::filesystem::path& dir, const std::vector<Entry>& entries,
                          const std::string& top) {
  Extracted result;
  if (auto refusal = check(entries, top); !refusal.empty()) {
    result.error = "refused the archive: " + refusal;
    return result;
  }
  UniqueFd root(::open(dir.c_str(), O_DIRECTORY | O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!root.valid()) {
    result.error = system_error("open", dir.string());
    return result;
  }
  for (const auto& entry : entries) {
    std::string relative;
    relative_to_top(entry.path, top, relative);
    if (relative.empty()) {
      continue;  // `top` is `dir`, which exists
    }
    result.error = entry.kind == Kind::directory ? write_directory(root.get(), relative, result)
                                                 : write_file(root.get(), entry, relative, result);
    if (!result.error.empty()) {
      return result;
    }
  }
  return result;
}

}  // namespace sandshim::tar
