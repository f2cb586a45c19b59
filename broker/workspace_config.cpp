#include "broker/workspace_config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "broker/workspace_identity.hpp"
#include "common/error.hpp"
#include "common/io.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_levels = 256;  // deeper than any path the admission walk accepts

// One directory from the cwd up: its descriptor, the name it has for messages, whether it is
// the top of a git repository.
struct Level {
  UniqueFd fd;
  fs::path name;
  bool git = false;
};

bool holds_git(int dir_fd) {
  struct stat st {};
  return ::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// The cwd and each of its ancestors through "..", up to / (or the first one it cannot enter).
std::vector<Level> levels_up(int cwd_fd, const fs::path& cwd) {
  std::vector<Level> levels;
  UniqueFd current(::openat(cwd_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  fs::path name = cwd;
  while (current.valid() && levels.size() < k_max_levels) {
    UniqueFd parent(::openat(current.get(), "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    bool top = !parent.valid() || same_directory(parent.get(), current.get());
    levels.push_back({std::move(current), name, false});
    levels.back().git = holds_git(levels.back().fd.get());
    if (top) {
      break;
    }
    current = std::move(parent);
    name = name.parent_path();
  }
  return levels;
}

// The levels whose .sandshim.conf apply, innermost first: the workspace (the nearest git top,
// else the cwd) up to the outermost git top above it.
std::pair<size_t, size_t> applying_levels(const std::vector<Level>& levels) {
  size_t workspace = 0;
  while (workspace < levels.size() && !levels[workspace].git) {
    ++workspace;
  }
  if (workspace == levels.size()) {
    return {0, 0};
  }
  size_t outermost = workspace;
  for (size_t i = workspace + 1; i < levels.size(); ++i) {
    outermost = levels[i].git ? i : outermost;
  }
  return {workspace, outermost};
}

[[noreturn]] void refuse(const fs::path& file, const std::string& why) {
  throw Fatal("workspace file " + quoted(file.string()) + " " + why +
              "; the broker reads a workspace's .sandshim.conf only as a regular file of at most " +
              std::to_string(k_max_workspace_config_bytes / 1024) + " KiB; nothing ran");
}

std::string read_capped(int fd, const fs::path& file) {
  std::optional<std::string> text = read_to_end(fd, k_max_workspace_config_bytes);
  if (!text) {
    refuse(file, std::string("cannot be read (") + std::strerror(errno) + ")");
  }
  if (text->size() > k_max_workspace_config_bytes) {
    refuse(file, "is larger than the cap");
  }
  return *text;
}

// The text of DIR/.sandshim.conf, nullopt when there is none.
std::optional<std::string> read_config_at(const Level& level) {
  fs::path file = level.name / ".sandshim.conf";
  UniqueFd fd(::openat(level.fd.get(), ".sandshim.conf",
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    refuse(file, errno == ELOOP ? "is a symbolic link"
                                : std::string("cannot be opened (") + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    refuse(file, "is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > k_max_workspace_config_bytes) {
    refuse(file, "is larger than the cap");
  }
  return read_capped(fd.get(), file);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_workspace_configs(int cwd_fd,
                                                                        const fs::path& cwd) {
  std::vector<Level> levels = levels_up(cwd_fd, cwd);
  if (levels.empty()) {
    return {};
  }
  auto [workspace, outermost] = applying_levels(levels);
  std::vector<std::pair<std::string, std::string>> texts;
  for (size_t i = outermost + 1; i-- > workspace;) {
    if (auto text = read_config_at(levels[i])) {
      texts.emplace_back((levels[i].name / ".sandshim.conf").string(), std::move(*text));
    }
  }
  return texts;
}

}  // namespace sandshim::broker
