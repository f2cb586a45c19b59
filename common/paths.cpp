#include "common/paths.hpp"
#include "common/environment.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace sandshim {

std::optional<fs::path> find_in_path(const std::string& name, const std::string& path_variable,
                                     const std::function<bool(const fs::path&)>& skip) {
  size_t begin = 0;
  while (begin <= path_variable.size()) {
    size_t end = path_variable.find(':', begin);
    if (end == std::string::npos) {
      end = path_variable.size();
    }
    std::string dir = path_variable.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty() || dir[0] != '/') {
      continue;  // relative PATH entries depend on the cwd an agent chose: never trust them
    }
    fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) != 0 || fs::is_directory(candidate)) {
      continue;
    }
    if (!skip || !skip(candidate)) {
      return candidate;
    }
  }
  return std::nullopt;
}

namespace {

// The distinct directories of a PATH value's absolute entries, in order, each opened once: a
// later entry that is the same directory (a repeat, /bin beside /usr/bin) finds nothing new.
std::vector<std::pair<std::string, UniqueFd>> opened_path_directories(
    const std::string& path_variable) {
  std::vector<std::pair<std::string, UniqueFd>> dirs;
  std::set<std::pair<dev_t, ino_t>> seen;
  size_t begin = 0;
  while (begin <= path_variable.size()) {
    size_t end = std::min(path_variable.find(':', begin), path_variable.size());
    std::string dir = path_variable.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty() || dir[0] != '/') {
      continue;
    }
    UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    struct stat info {};
    if (fd.valid() && ::fstat(fd.get(), &info) == 0 &&
        seen.insert({info.st_dev, info.st_ino}).second) {
      dirs.emplace_back(std::move(dir), std::move(fd));
    }
  }
  return dirs;
}

// find_in_path's test, relative to an open directory: one path component to walk, not four.
bool is_executable_file_in(int dir_fd, std::string_view name) {
  std::string entry(name);
  struct stat info {};
  return ::faccessat(dir_fd, entry.c_str(), X_OK, 0) == 0 &&
         ::fstatat(dir_fd, entry.c_str(), &info, 0) == 0 && !S_ISDIR(info.st_mode);
}

}  // namespace

std::map<std::string, fs::path> find_each_in_path(const std::set<std::string_view>& names,
                                                  const std::string& path_variable) {
  std::map<std::string, fs::path> found;
  for (const auto& [dir, fd] : opened_path_directories(path_variable)) {
    for (std::string_view name : names) {
      if (!found.contains(std::string(name)) && is_executable_file_in(fd.get(), name)) {
        found.emplace(std::string(name), fs::path(dir) / name);
      }
    }
  }
  return found;
}

std::optional<fs::path> find_git_root(const fs::path& start) {
  std::error_code ec;
  for (fs::path dir = start; !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) {
      return dir;
    }
    if (dir == dir.root_path()) {
      break;
    }
  }
  return std::nullopt;
}

namespace {

// Permission bits that apply to uid:gid for this file, as the kernel would pick them.
mode_t applicable_bits(const struct stat& st, uid_t uid, gid_t gid) {
  if (st.st_uid == uid) {
    return (st.st_mode & S_IRWXU) >> 6;
  }
  if (st.st_gid == gid) {
    return (st.st_mode & S_IRWXG) >> 3;
  }
  return st.st_mode & S_IRWXO;
}

}  // namespace

std::optional<std::string> unreadable_component(const fs::path& dir, uid_t uid, gid_t gid) {
  fs::path current = dir.root_path();
  auto check = [&](const fs::path& p, mode_t needed) -> std::optional<std::string> {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      return p.string() + " cannot be inspected";
    }
    // The container user has no capabilities (--cap-drop ALL), so even uid 0 obeys the bits.
    mode_t bits = applicable_bits(st, uid, gid);
    if ((bits & needed) != needed) {
      return p.string();
    }
    return std::nullopt;
  };
  for (const auto& part : dir.relative_path()) {
    current /= part;
    if (current == dir) {
      break;
    }
    if (auto blocked = check(current, 01)) {
      return blocked;
    }
  }
  return check(dir, 05);
}

bool is_within(const fs::path& path, const fs::path& base) {
  auto [base_end, path_it] = std::mismatch(base.begin(), base.end(), path.begin(), path.end());
  (void)path_it;
  return base_end == base.end() || (std::next(base_end) == base.end() && base_end->empty());
}

std::optional<fs::path> bin_parent_of(std::string_view program, const fs::path& cwd) {
  fs::path path(program);
  path = (path.is_relative() ? cwd / path : path).lexically_normal();
  if (path.parent_path().filename() != "bin") {
    return std::nullopt;
  }
  return path.parent_path().parent_path();
}

fs::path self_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

std::vector<fs::path> companion_candidates(std::string_view name, std::string_view install_subdir) {
  fs::path self = self_executable();
  if (self.empty()) {
    return {};  // never a name relative to the working directory
  }
  fs::path dir = self.parent_path();
  return {dir / name, (dir / ".." / "libexec" / install_subdir / name).lexically_normal()};
}

std::optional<fs::path> find_companion(std::string_view name, std::string_view install_subdir) {
  for (const fs::path& candidate : companion_candidates(name, install_subdir)) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

std::string companion_places(std::string_view name, std::string_view install_subdir) {
  std::string places;
  for (const fs::path& candidate : companion_candidates(name, install_subdir)) {
    places += (places.empty() ? "" : " and ") + quoted(candidate.string());
  }
  return places.empty() ? "this binary's directory (unknown)" : places;
}

fs::path home_directory() {
  if (std::optional<fs::path> home = environment::home()) {
    return *home;
  }
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    return pw->pw_dir;
  }
  return "/";
}

fs::path xdg_directory(const std::string& kind) {
  if (std::optional<fs::path> value = environment::xdg_home(kind)) {
    return *value;
  }
  if (kind == "config") {
    return home_directory() / ".config";
  }
  if (kind == "state") {
    return home_directory() / ".local" / "state";
  }
  return home_directory() / ".local" / "share";
}

}  // namespace sandshim
