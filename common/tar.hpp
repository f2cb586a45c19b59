#pragma once

// POSIX tar (ustar, with pax headers for what ustar cannot hold), written and read in memory:
// the Engine API's archive endpoints speak it. The reader trusts nothing: it is a security
// boundary for archives that come back from a container.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandshim::tar {

enum class Kind { file, directory, symlink, hardlink, other };

struct Entry {
  std::string path;  // as in the archive ("dir/file"); a directory's without its trailing '/'
  Kind kind = Kind::file;
  uint32_t mode = 0644;  // permission bits only
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t mtime = 0;
  std::string link;  // a symlink's or hardlink's target
  std::string data;  // a file's content
};

// Appends entries to an archive held in memory.
class Writer {
 public:
  // Adds one entry; a path or link ustar cannot hold goes in a pax header before it.
  void add(const Entry& entry);
  // The archive with its two zero blocks; the writer is empty afterwards.
  std::string finish();

 private:
  void add_pax(const Entry& entry);
  void add_header(const Entry& entry, char type, uint64_t size);
  void add_data(std::string_view data);

  std::string m_out;
};

// What a read found: the entries, or why the archive was refused.
struct ReadResult {
  std::vector<Entry> entries;
  std::string error;  // empty when the archive was read whole
};

// Limits on what a read accepts, so a hostile archive costs bounded memory and time.
struct ReadLimits {
  uint64_t max_entries = 100000;
  uint64_t max_total_bytes = 256ULL << 20;  // of file content, all entries together
};

// Reads a whole archive (ustar, pax `x`/`g`, GNU `L`/`K` long names); refuses bad checksums,
// truncation, sizes past the limits and numbers that are not numbers.
ReadResult read(std::string_view archive, const ReadLimits& limits = {});

// Why `path` may not be written under a directory: absolute, empty, `..`, or a NUL; nullopt
// when it names something beneath the directory.
std::optional<std::string> unsafe_path(std::string_view path);

}  // namespace sandshim::tar
