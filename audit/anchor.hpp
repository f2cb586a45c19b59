#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace sandshim::audit {

// One line of the anchor log: a chain head the writer committed, or the anchor a prune left.
struct AnchorEntry {
  enum class Kind { head, prune };
  Kind kind = Kind::head;
  std::string chain_id;  // chain_state.chain_id: which database the line is about
  int64_t seq = 0;
  std::string hash;
  int64_t time_ms = 0;
  int line = 0;  // where it was read, for messages
};

// "head CHAIN SEQ HASH TIME_MS" or "prune CHAIN SEQ HASH TIME_MS", newline-terminated.
std::string anchor_line(const AnchorEntry& entry);

// The anchor log: a root-owned file the audit's writer may only append to (mode 0660 root:the
// broker's group, `chattr +a`), so no user, the writer included, can rewrite a head it recorded.
// `audit verify` compares the database against every line.
class AnchorLog {
 public:
  // Opens for appending; refuses (Fatal, exit 125) a missing file or one that is not root-owned
  // or that others may write.
  static AnchorLog open_for_append(const std::filesystem::path& path);
  // Appends one line with a single write(2), so concurrent writers never interleave.
  void append(const AnchorEntry& entry);
  const std::filesystem::path& path() const { return m_path; }

 private:
  AnchorLog(std::filesystem::path path, UniqueFd fd);
  std::filesystem::path m_path;
  UniqueFd m_fd;
};

struct AnchorFile {
  std::vector<AnchorEntry> entries;
  bool root_owned = false;
  bool append_only = false;  // the inode carries FS_APPEND_FL
  std::vector<int> bad_lines;
};

// Every line of the log; throws when it cannot be read.
AnchorFile read_anchor_file(const std::filesystem::path& path);

}  // namespace sandshim::audit
