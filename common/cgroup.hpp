#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace sandshim {

// The OOM kill counter of process `pid`'s memory cgroup (memory.events on cgroup v2,
// memory.oom_control on v1, both `oom_kill N`), opened now, while the process lives: a process
// that exited shows the root cgroup, and its container's cgroup goes soon after. Invalid when it
// cannot be found or opened here (another machine's process) or the process is in the root.
UniqueFd open_oom_kill_counter(int64_t pid);

// The count read from that descriptor; nullopt when it cannot be read (the cgroup was removed
// meanwhile, an older kernel without the line). The kernel counts a kill before it sends the
// signal, so whoever reaps the victim and then reads sees it.
std::optional<uint64_t> read_oom_kill_count(int counter_fd);

// A process's memory cgroup: its path in the hierarchy, and whether that is the unified (v2) one.
struct MemoryCgroup {
  std::string path;
  bool unified = false;
};

// The parts, for tests: the memory cgroup in /proc/PID/cgroup's text ("4:memory:/docker/ID"),
// the directory where it is mounted in /proc/self/mountinfo's text, and the kill count in a
// memory.events or memory.oom_control file's text.
std::optional<MemoryCgroup> memory_cgroup_of(std::string_view proc_cgroup);
std::optional<std::string> memory_cgroup_dir(std::string_view mountinfo,
                                             const MemoryCgroup& cgroup);
std::optional<uint64_t> oom_kill_count(std::string_view events);

}  // namespace sandshim
