#include "common/dir_at.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/error.hpp"
#include "common/io.hpp"
#include "common/unique_fd.hpp"

namespace sandshim {

std::vector<std::string> names_in(int dir) {
  std::vector<std::string> names;
  UniqueFd copy(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  UniqueDir stream(copy.valid() ? ::fdopendir(copy.get()) : nullptr);
  if (!stream) {
    throw Fatal(std::string("cannot list a directory: ") + std::strerror(errno));
  }
  (void)copy.release();  // the stream owns it now
  ::rewinddir(stream.get());
  while (const dirent* entry = ::readdir(stream.get())) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") {
      names.push_back(std::move(name));
    }
  }
  return names;
}

bool remove_entry_at(int dir, const std::string& name) {
  if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) {
    return true;
  }
  if (errno != EISDIR && errno != EPERM) {
    return false;
  }
  UniqueFd inner(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  bool emptied = inner.valid();
  if (emptied) {
    try {
      for (const std::string& entry : names_in(inner.get())) {
        emptied = remove_entry_at(inner.get(), entry) && emptied;
      }
    } catch (const Fatal&) {
      emptied = false;
    }
  }
  return emptied && ::unlinkat(dir, name.c_str(), AT_REMOVEDIR) == 0;
}

std::string dev_ino(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return "";
  }
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

bool copy_contents(int from, int to) {
  std::array<char, 64 * 1024> buffer{};
  for (off_t offset = 0;;) {
    ssize_t got =
        retry_on_eintr([&] { return ::pread(from, buffer.data(), buffer.size(), offset); });
    if (got <= 0) {
      return got == 0;
    }
    if (!write_all(to, std::string_view(buffer.data(), static_cast<size_t>(got)))) {
      return false;
    }
    offset += got;
  }
}

}  // namespace sandshim
