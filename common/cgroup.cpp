#include "common/cgroup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <vector>

#include "common/io.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim {

namespace {

std::vector<std::string_view> split_on(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at = text.find(separator); at != std::string_view::npos;
       at = text.find(separator, start)) {
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

// mountinfo's fields are separated by single spaces (split_words would split "rw,memory").
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields = split_on(line, ' ');
  std::erase_if(fields, [](std::string_view field) { return field.empty(); });
  return fields;
}

bool names_memory_controller(std::string_view controllers) {
  for (auto name : split_on(controllers, ',')) {
    if (name == "memory") {
      return true;
    }
  }
  return false;
}

// `path` beneath the mount's root, as a path below its mount point; nullopt when it is not.
std::optional<std::string> beneath_root(std::string_view mount_point, std::string_view root,
                                        std::string_view path) {
  if (root == "/") {
    return std::string(mount_point) + (path == "/" ? "" : std::string(path));
  }
  if (path.substr(0, root.size()) != root ||
      (path.size() > root.size() && path[root.size()] != '/')) {
    return std::nullopt;
  }
  return std::string(mount_point) + std::string(path.substr(root.size()));
}

}  // namespace

// A v1 memory line ("4:memory:/docker/ID") wins over the v2 line ("0::/…"): on a hybrid host
// the memory controller is on v1 and the unified hierarchy has none.
std::optional<MemoryCgroup> memory_cgroup_of(std::string_view proc_cgroup) {
  std::optional<MemoryCgroup> unified;
  for (const auto& line : split_lines(proc_cgroup)) {
    auto fields = split_on(line, ':');
    if (fields.size() < 3) {
      continue;
    }
    // The path itself may hold ':'; it is everything after the second one.
    std::string path(std::string_view(line).substr(fields[0].size() + fields[1].size() + 2));
    if (names_memory_controller(fields[1])) {
      return MemoryCgroup{path, false};
    }
    if (fields[0] == "0" && fields[1].empty()) {
      unified = MemoryCgroup{path, true};
    }
  }
  return unified;
}

// mountinfo: ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER_OPTIONS.
// Names with spaces are escaped there (\040), and cgroup paths of engines have none.
std::optional<std::string> memory_cgroup_dir(std::string_view mountinfo,
                                             const MemoryCgroup& cgroup) {
  for (const auto& line : split_lines(mountinfo)) {
    auto fields = fields_of(line);
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") {
      ++dash;
    }
    if (dash + 3 >= fields.size()) {
      continue;
    }
    std::string_view type = fields[dash + 1];
    bool matches = cgroup.unified ? type == "cgroup2"
                                  : type == "cgroup" && names_memory_controller(fields[dash + 3]);
    if (matches) {
      return beneath_root(fields[4], fields[3], cgroup.path);
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> oom_kill_count(std::string_view events) {
  for (const auto& line : split_lines(events)) {
    auto words = split_words(line);
    if (words.size() == 2 && words[0] == "oom_kill") {
      uint64_t count = 0;
      const std::string& value = words[1];
      auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), count);
      if (error == std::errc() && end == value.data() + value.size()) {
        return count;
      }
    }
  }
  return std::nullopt;
}

UniqueFd open_oom_kill_counter(int64_t pid) {
  if (pid <= 0) {
    return UniqueFd();
  }
  auto proc_cgroup = read_file_text("/proc/" + std::to_string(pid) + "/cgroup");
  auto mountinfo = read_file_text("/proc/self/mountinfo");
  auto cgroup = proc_cgroup ? memory_cgroup_of(*proc_cgroup) : std::nullopt;
  if (!mountinfo || !cgroup || cgroup->path == "/") {
    return UniqueFd();
  }
  auto dir = memory_cgroup_dir(*mountinfo, *cgroup);
  if (!dir) {
    return UniqueFd();
  }
  std::string file = *dir + (cgroup->unified ? "/memory.events" : "/memory.oom_control");
  return UniqueFd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
}

std::optional<uint64_t> read_oom_kill_count(int counter_fd) {
  if (counter_fd < 0) {
    return std::nullopt;
  }
  char buffer[4096];
  ssize_t size = retry_on_eintr([&] { return ::pread(counter_fd, buffer, sizeof buffer, 0); });
  if (size <= 0) {
    return std::nullopt;
  }
  return oom_kill_count(std::string_view(buffer, static_cast<size_t>(size)));
}

}  // namespace sandshim
