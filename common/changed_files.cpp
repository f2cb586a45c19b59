#include "common/changed_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>

#include "common/unique_fd.hpp"

namespace sandshim {

namespace {

bool at_or_after(const timespec& when, const timespec& since) {
  return when.tv_sec > since.tv_sec ||
         (when.tv_sec == since.tv_sec && when.tv_nsec >= since.tv_nsec);
}

class ChangeScan {
 public:
  ChangeScan(timespec since, const ChangeScanLimits& limits) : m_since(since), m_limits(limits) {}

  ChangedEntries run(int dir_fd) {
    struct stat root {};
    UniqueFd dir(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid() || ::fstat(dir.get(), &root) != 0) {
      ++m_found.unreadable_dirs;
      return m_found;
    }
    m_device = root.st_dev;
    visit_directory(std::move(dir), "");
    return m_found;
  }

 private:
  bool skipped(const std::string& name) const {
    return std::find(m_limits.skip_names.begin(), m_limits.skip_names.end(), name) !=
           m_limits.skip_names.end();
  }

  void note_changed(const std::string& relative) {
    ++m_found.count;
    if (m_found.paths.size() < m_limits.max_listed) {
      m_found.paths.push_back(relative);
    }
  }

  // Opened only by name beneath a descriptor already held, without following a link.
  void enter(int parent, const std::string& name, const std::string& relative) {
    UniqueFd dir(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) {
      ++m_found.unreadable_dirs;
      return;
    }
    visit_directory(std::move(dir), relative);
  }

  void visit_directory(UniqueFd dir, const std::string& relative_dir) {
    int fd = dir.get();
    UniqueDir handle(::fdopendir(fd));
    if (!handle) {
      ++m_found.unreadable_dirs;
      return;
    }
    (void)dir.release();  // the DIR owns it now
    std::vector<std::pair<std::string, std::string>> subdirs;
    while (const dirent* entry = ::readdir(handle.get())) {
      std::string name = entry->d_name;
      if (name == "." || name == "..") {
        continue;
      }
      if (++m_looked > m_limits.max_entries) {
        m_found.stopped_at_limit = true;
        return;
      }
      struct stat st {};
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        continue;  // gone meanwhile
      }
      std::string relative = relative_dir.empty() ? name : relative_dir + "/" + name;
      if (S_ISDIR(st.st_mode) && skipped(name)) {
        continue;
      }
      if (at_or_after(st.st_ctim, m_since)) {
        note_changed(relative);
      }
      if (S_ISDIR(st.st_mode) && st.st_dev == m_device) {
        subdirs.emplace_back(name, relative);
      }
    }
    // Entered after the listing, so one directory's handle is open at a time per level.
    for (const auto& [name, relative] : subdirs) {
      if (m_found.stopped_at_limit) {
        return;
      }
      enter(fd, name, relative);
    }
  }

  timespec m_since;
  const ChangeScanLimits& m_limits;
  dev_t m_device = 0;
  int64_t m_looked = 0;
  ChangedEntries m_found;
};

}  // namespace

timespec coarse_now() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return now;
}

ChangedEntries changed_since(int dir_fd, timespec since, const ChangeScanLimits& limits) {
  return ChangeScan(since, limits).run(dir_fd);
}

}  // namespace sandshim
