#include "pool/pool_files.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <limits>

#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "run/caller.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

fs::path pool_dir() {
  return xdg_directory("state") / "sandshim" / "pool";
}

fs::path claimed_dir() {
  return pool_dir() / "claimed";
}

// Writes `text` to path atomically: a reader sees all of it or the file before.
void publish_file(const fs::path& path, const std::string& text) {
  fs::path temporary = path.parent_path() / (".new-" + new_run_id());
  {
    std::ofstream out(temporary);
    out << text;
  }
  fs::rename(temporary, path);
}

bool process_alive(int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// A reservation names the process that starts its container (and waits for it), whether that
// is surplus, and when it was written: a run plans its refill's starts, and the detached process
// that starts them takes them over within k_handover_ms.
void write_reservation(const fs::path& path, bool surplus) {
  publish_file(path, std::to_string(::getpid()) + " " + (surplus ? "1 " : "0 ") +
                         std::to_string(wall_clock_ms()) + "\n");
}

fs::path reserve_start(const fs::path& dir, bool surplus) {
  fs::path path = dir / (std::string(k_start_prefix) + new_run_id());
  write_reservation(path, surplus);
  return path;
}

void release_starts(const std::vector<fs::path>& starts) {
  std::error_code ec;
  for (const auto& path : starts) {
    fs::remove(path, ec);
  }
}

// The starts pending in dir; a reservation whose process is gone (a refill killed) is removed.
PendingStarts pending_starts(const fs::path& dir) {
  PendingStarts pending;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (!item.path().filename().string().starts_with(k_start_prefix)) {
      continue;
    }
    int64_t pid = 0;
    int surplus = 0;
    int64_t written_ms = 0;
    std::ifstream(item.path()) >> pid >> surplus >> written_ms;
    if (!process_alive(pid) && wall_clock_ms() - written_ms > k_handover_ms) {
      fs::remove(item.path(), ec);
      continue;
    }
    (surplus == 1 ? pending.surplus : pending.base) += 1;
  }
  return pending;
}

// Waits until no start is pending in dir, for k_pending_patience_ms at most.
void wait_for_pending_starts(const fs::path& dir) {
  int64_t until = monotonic_ms() + k_pending_patience_ms;
  while (pending_starts(dir).total() > 0 && monotonic_ms() < until) {
    ::usleep(20'000);
  }
}

// Wakes a claim that waits when an entry is published or a start given up in dir.
UniqueFd watch_directory(const fs::path& dir) {
  UniqueFd fd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (fd.valid() && ::inotify_add_watch(fd.get(), dir.c_str(), IN_MOVED_TO | IN_DELETE) < 0) {
    fd.reset();
  }
  return fd;
}

// Until the watch sees a change, 20 ms pass (a start's process may die silently) or until_ms.
void wait_for_change(const UniqueFd& watch, int64_t until_ms) {
  int64_t wait_ms = std::clamp<int64_t>(until_ms - monotonic_ms(), 0, 20);
  if (!watch.valid()) {
    ::usleep(static_cast<useconds_t>(wait_ms * 1000));
    return;
  }
  pollfd ready{watch.get(), POLLIN, 0};
  if (::poll(&ready, 1, static_cast<int>(wait_ms)) > 0) {
    char events[4096];
    while (::read(watch.get(), events, sizeof events) > 0) {
    }
  }
}

fs::path demand_path(const std::string& key) {
  return pool_dir() / (key + ".demand");
}

PoolDemand read_demand(const std::string& key) {
  PoolDemand demand;
  std::ifstream(demand_path(key)) >> demand.target >> demand.last_draw_ms;
  return demand;
}

void write_demand(const std::string& key, const PoolDemand& demand) {
  publish_file(demand_path(key),
               std::to_string(demand.target) + " " + std::to_string(demand.last_draw_ms) + "\n");
}

// How many containers at the run's memory limit fit in the memory the host has available now.
int64_t memory_room(const Policy& policy) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (policy.memory_bytes > 0 && std::getline(meminfo, line)) {
    if (line.starts_with("MemAvailable:")) {
      int64_t kib = std::stoll(line.substr(line.find_first_of("0123456789")));
      return kib * 1024 / static_cast<int64_t>(policy.memory_bytes);
    }
  }
  return std::numeric_limits<int64_t>::max();
}

// Marks a claim that had to wait for a start: its refill then grows the target.
void mark_waited(const std::string& run_id) {
  std::ofstream(claimed_dir() / run_id, std::ios::app) << "waited 1\n";
}

bool claim_waited(const std::string& run_id) {
  std::ifstream in(claimed_dir() / run_id);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "waited 1") {
      return true;
    }
  }
  return false;
}

}  // namespace sandshim::shim
