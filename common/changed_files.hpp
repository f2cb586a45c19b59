#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sandshim {

// What a scan for changed entries may do.
struct ChangeScanLimits {
  int64_t max_entries = 200'000;        // past this many entries looked at, the scan stops
  size_t max_listed = 20;               // paths named in the result; the count goes on
  std::vector<std::string> skip_names;  // directories never entered, at any depth (".git")
};

// Entries beneath a directory whose status changed at or after a moment.
struct ChangedEntries {
  int64_t count = 0;               // entries with ctime >= the moment
  std::vector<std::string> paths;  // the first max_listed of them, relative, '/'-separated
  int64_t unreadable_dirs = 0;     // directories that could not be opened (not searched)
  bool stopped_at_limit = false;   // max_entries was reached: the count is a lower bound
};

// The kernel stamps ctime with its coarse clock: this is the moment to compare with, taken on
// the same clock, so a change right after it is never dated before it.
timespec coarse_now();

// Walks beneath `dir_fd` (never following a link, never leaving its file system) for entries
// whose ctime is at or after `since`: a file written, created, renamed or chmodded, or a
// directory whose entries changed (a removal shows as its directory). ctime cannot be set back
// by the writer, unlike mtime.
ChangedEntries changed_since(int dir_fd, timespec since, const ChangeScanLimits& limits);

}  // namespace sandshim
