#include "run/cpu_share.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace {

// FNV-1a: a stable spread of run ids over the CPUs, the same on every build.
uint64_t spread_of(const std::string& seed) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : seed) {
    hash = (hash ^ c) * 1099511628211ULL;
  }
  return hash;
}

size_t whole_cpus(double cpus) {
  double count = std::ceil(cpus - 1e-9);  // 1.0000000001 from a config file is still 1
  return count < 1 ? 1 : static_cast<size_t>(count);
}

namespace fs = std::filesystem;

// Written under a temporary name and renamed: a concurrent run never mounts half a file.
void write_readable_file(const fs::path& file, const std::string& text) {
  fs::path temporary = file;
  temporary += ".new-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary);
    out << text;
    if (!out) {
      throw Fatal("cannot write " + quoted(temporary.string()) + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  fs::permissions(temporary, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  ec);
  fs::rename(temporary, file, ec);
  if (ec) {
    throw Fatal("cannot create " + quoted(file.string()) + ": " + ec.message());
  }
}

}  // namespace

double quota_within(double cpus, size_t usable) {
  return usable == 0 ? cpus : std::min(cpus, static_cast<double>(usable));
}

size_t cpus_seen(double cpus, size_t usable) {
  return std::min(whole_cpus(cpus), usable);
}

std::string online_cpus_text(size_t count) {
  return count <= 1 ? "0\n" : "0-" + std::to_string(count - 1) + "\n";
}

fs::path online_cpus_file(size_t count) {
  fs::path dir = xdg_directory("state") / "sandshim" / "cpus";
  fs::path file = dir / ("online-" + std::to_string(count));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Fatal("cannot create " + quoted(dir.string()) + " for sandbox.cpus: " + ec.message());
  }
  std::string text = online_cpus_text(count);
  std::ifstream in(file);
  std::string present((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (present != text) {
    write_readable_file(file, text);
  }
  return file;
}

std::vector<int> usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) {
    return cpus;  // unknown: no cpuset, the quota alone limits the run
  }
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) {
      cpus.push_back(cpu);
    }
  }
  return cpus;
}

std::string cpuset_for(double cpus, const std::vector<int>& usable, const std::string& seed) {
  size_t count = whole_cpus(cpus);
  if (usable.empty() || count >= usable.size()) {
    return "";
  }
  size_t start = spread_of(seed) % usable.size();
  std::vector<int> chosen;
  for (size_t i = 0; i < count; ++i) {
    chosen.push_back(usable[(start + i) % usable.size()]);
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<std::string> names;
  for (int cpu : chosen) {
    names.push_back(std::to_string(cpu));
  }
  return join(names, ",");
}

}  // namespace sandshim::shim
