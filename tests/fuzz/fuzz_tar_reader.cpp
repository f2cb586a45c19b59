// The tar reader reads what a container sends back (GET /containers/{id}/archive): any input is
// refused with a reason or read within the limits; what is read writes and reads back to the
// same entries, and the path check never calls a path with `..` or a leading '/' safe.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/tar.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;

namespace {

constexpr tar::ReadLimits k_limits{1000, 1 << 20};

void check_round_trip(const tar::ReadResult& read) {
  tar::Writer writer;
  for (const auto& entry : read.entries) {
    writer.add(entry);
  }
  tar::ReadResult again = tar::read(writer.finish(), k_limits);
  fuzz::require(again.error.empty(), "a written archive does not read back");
  fuzz::require(again.entries.size() == read.entries.size(), "entries lost in a round trip");
  for (size_t i = 0; i < again.entries.size(); ++i) {
    const auto& a = read.entries[i];
    const auto& b = again.entries[i];
    if (a.path.find('\0') != std::string::npos || a.link.find('\0') != std::string::npos ||
        a.path.empty()) {
      continue;  // ustar cannot carry a NUL, pax takes what it is given
    }
    fuzz::require(a.kind == b.kind || a.kind == tar::Kind::other, "a kind changed");
    fuzz::require(a.kind != tar::Kind::file || a.data == b.data, "a file's data changed");
  }
}

void check_paths(const tar::ReadResult& read) {
  for (const auto& entry : read.entries) {
    if (!tar::unsafe_path(entry.path)) {
      fuzz::require(!entry.path.starts_with('/'), "an absolute path passed as safe");
      fuzz::require(entry.path != ".." && !entry.path.starts_with("../") &&
                        entry.path.find("/../") == std::string::npos &&
                        !entry.path.ends_with("/.."),
                    "a path with .. passed as safe");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string_view archive(reinterpret_cast<const char*>(data), size);
  tar::ReadResult read = tar::read(archive, k_limits);
  if (!read.error.empty()) {
    fuzz::require(read.entries.empty(), "a refused archive kept entries");
    return 0;
  }
  uint64_t total = 0;
  for (const auto& entry : read.entries) {
    total += entry.data.size();
  }
  fuzz::require(total <= k_limits.max_total_bytes, "the byte limit did not hold");
  fuzz::require(read.entries.size() <= k_limits.max_entries, "the entry limit did not hold");
  check_paths(read);
  check_round_trip(read);
  return 0;
}
