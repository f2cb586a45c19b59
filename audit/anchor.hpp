#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "audit/chain_key.hpp"
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
  int line = 0;             // where it was read, for messages
  bool old_format = false;  // format 1: no seal, read for the lines written before format 2
  bool keyed_seal = false;  // sealed with the chain key (else with a SHA-256 checksum)
};

// Whose log it is: the first line of a format-2 log, written by the first writer to open it.
struct AnchorOwner {
  std::string chain_id;
  std::filesystem::path database;  // the database that chain lives in, when it claimed the log
  int line = 0;
};

// Format 2, each line sealed so that verify knows what this chain's writer wrote:
//   sandshim-anchor 2 CHAIN_ID DATABASE SEAL      (once, first)
//   head CHAIN_ID SEQ HASH TIME_MS SEAL           (each committed head)
//   prune CHAIN_ID SEQ HASH TIME_MS SEAL          (each prune's anchor)
// SEAL is `hmac:` + HMAC-SHA256 under the chain key, or `sha256:` + SHA-256 without one, over
// "sandshim-anchor-v2" NUL and the line before the space that precedes the seal. Fields are
// written with escape_text, spaces as \x20, so none can hold a space or a newline.
std::string anchor_line(const AnchorEntry& entry, const ChainKey* key);
std::string anchor_header(const AnchorOwner& owner, const ChainKey* key);

// The anchor log: a root-owned file the audit's writer may only append to (mode 0660 root:the
// broker's group, `chattr +a`), so no user, the writer included, can rewrite a head it recorded.
// `audit verify` compares the database against every line.
class AnchorLog {
 public:
  // Opens for appending on behalf of `owner`'s chain and claims an unclaimed log (writes its
  // header, under flock). Refuses (Fatal, exit 125) a missing file, one that is not root-owned or
  // that others may write, and a log that belongs to another chain, naming both.
  static AnchorLog open_for_append(const std::filesystem::path& path, const AnchorOwner& owner,
                                   const ChainKey* key);
  // Appends one line with a single write(2), so concurrent writers never interleave.
  void append(const AnchorEntry& entry);
  const std::filesystem::path& path() const { return m_path; }

 private:
  AnchorLog(std::filesystem::path path, UniqueFd fd, std::optional<ChainKey> key);
  std::filesystem::path m_path;
  UniqueFd m_fd;
  std::optional<ChainKey> m_key;
};

// A line the log's chain did not write: junk, another chain's, a broken seal, cut short.
struct AnchorJunk {
  int line = 0;
  std::string what;
};

struct AnchorFile {
  std::optional<AnchorOwner> owner;  // nullopt: a log in format 1 only
  std::vector<AnchorEntry> entries;  // sealed lines of the owner, and format-1 lines before it
  int old_format_lines = 0;          // format-1 lines (before the header), all chains
  std::optional<AnchorJunk> junk;    // the first line the owner's writer did not write
  bool root_owned = false;
  bool append_only = false;  // the inode carries FS_APPEND_FL
};

// Every line of the log; seals are checked with `key` (a keyed seal without it is junk). Throws
// when the log cannot be read.
AnchorFile read_anchor_file(const std::filesystem::path& path, const ChainKey* key = nullptr);

}  // namespace sandshim::audit
