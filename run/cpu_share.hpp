#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace sandshim::shim {

// The CPUs this process may run on (its affinity): the ones a run's cpuset is chosen from.
std::vector<int> usable_cpus();

// The cpuset that makes a container count as many CPUs as its quota lets it use: ceil(cpus) of
// `usable`, consecutive from a place `seed` (the run id) picks, so concurrent runs spread over
// the host. Empty when the quota covers every usable CPU (the container sees them all).
std::string cpuset_for(double cpus, const std::vector<int>& usable, const std::string& seed);

// The quota the engine is given: at most the usable CPUs (an engine refuses a quota above the
// host's count, and more cannot be used anyway); unchanged when they are unknown.
double quota_within(double cpus, size_t usable);

// How many CPUs a container with the quota `cpus` sees: ceil(cpus), at most the usable ones.
size_t cpus_seen(double cpus, size_t usable);

// What /sys/devices/system/cpu/online says when `count` CPUs are online: "0" or "0-N".
std::string online_cpus_text(size_t count);

// A read-only file with that text in sandshim's state directory, mounted over the container's
// /sys/devices/system/cpu/online: glibc counts online CPUs there (Python's os.cpu_count(),
// sysconf), not in the cpuset. Throws Fatal when it cannot be written.
std::filesystem::path online_cpus_file(size_t count);

// Where the container reads the online CPUs.
inline constexpr const char* k_online_cpus_target = "/sys/devices/system/cpu/online";

}  // namespace sandshim::shim
