#include "audit/anchor.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

[[noreturn]] void anchor_error(const std::filesystem::path& path, const std::string& what) {
  throw Fatal("audit anchor " + quoted(path.string()) + ": " + what +
              "; fix: create it as root: install -o root -g sandshim -m 0660 /dev/null " +
              path.string() + " && chattr +a " + path.string());
}

bool has_append_only_flag(int fd) {
  int flags = 0;
  return ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_APPEND_FL) != 0;
}

std::optional<AnchorEntry> parse_line(const std::string& text, int line) {
  std::istringstream in(text);
  std::string kind;
  AnchorEntry entry;
  entry.line = line;
  if (!(in >> kind >> entry.chain_id >> entry.seq >> entry.hash >> entry.time_ms) ||
      (kind != "head" && kind != "prune") || entry.hash.size() != 64) {
    return std::nullopt;
  }
  entry.kind = kind == "head" ? AnchorEntry::Kind::head : AnchorEntry::Kind::prune;
  return entry;
}

}  // namespace

std::string anchor_line(const AnchorEntry& entry) {
  return std::string(entry.kind == AnchorEntry::Kind::head ? "head " : "prune ") + entry.chain_id +
         " " + std::to_string(entry.seq) + " " + entry.hash + " " + std::to_string(entry.time_ms) +
         "\n";
}

AnchorLog::AnchorLog(std::filesystem::path path, UniqueFd fd)
    : m_path(std::move(path)), m_fd(std::move(fd)) {}

AnchorLog AnchorLog::open_for_append(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    anchor_error(path, "cannot open it for appending: " + std::string(std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
      (st.st_mode & S_IWOTH) != 0) {
    anchor_error(path, "it must be a root-owned regular file that others cannot write");
  }
  return AnchorLog(path, std::move(fd));
}

void AnchorLog::append(const AnchorEntry& entry) {
  std::string line = anchor_line(entry);
  if (::write(m_fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    anchor_error(m_path, "cannot append the chain head: " + std::string(std::strerror(errno)));
  }
}

AnchorFile read_anchor_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    anchor_error(path, "cannot read it: " + std::string(std::strerror(errno)));
  }
  AnchorFile file;
  file.root_owned = st.st_uid == 0 && (st.st_mode & S_IWOTH) == 0;
  file.append_only = has_append_only_flag(fd.get());
  std::ifstream in("/proc/self/fd/" + std::to_string(fd.get()));
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (auto entry = parse_line(text, line)) {
      file.entries.push_back(*entry);
    } else {
      file.bad_lines.push_back(line);
    }
  }
  return file;
}

}  // namespace sandshim::audit
