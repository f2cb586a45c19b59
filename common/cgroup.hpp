#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim {

// How many times the kernel's OOM killer has killed a process in the memory cgroup of process
// `pid` (memory.events on cgroup v2, memory.oom_control on v1, both `oom_kill N`); nullopt when
// that cgroup cannot be found or read here (another machine's process, an older kernel). The
// kernel counts a kill before it sends the signal, so whoever reaps the victim sees the count.
std::optional<uint64_t> oom_kills_in_cgroup_of(int64_t pid);

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
