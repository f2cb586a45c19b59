#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"
#include "policy/policy.hpp"
#include "pool/pool.hpp"

namespace sandshim::shim {

// The warm pool's state directory, $XDG_STATE_HOME/sandshim/pool: the small files beside the
// idle entries (reservations of starts under way, a key's demand, a claim's marks), each
// published whole by rename, and a watch that wakes a claim waiting for a start.

// A start pending longer than this is over whatever its file says: a drain stops waiting for it.
inline constexpr int64_t k_pending_patience_ms = 120'000;
inline constexpr std::string_view k_start_prefix = ".starting-";
// A reservation whose process is gone still counts this long (its starter may be taking it over).
inline constexpr int64_t k_handover_ms = 5000;

// The state directory, and its claimed/ (an entry moves there when a run claims it).
std::filesystem::path pool_dir();
std::filesystem::path claimed_dir();

// Writes `text` to path atomically: a reader sees all of it or the file before.
void publish_file(const std::filesystem::path& path, const std::string& text);

bool process_alive(int64_t pid);

// Starts a refill has reserved and not yet published, by kind.
struct PendingStarts {
  int64_t base = 0;
  int64_t surplus = 0;
  int64_t total() const { return base + surplus; }
};

// A reservation names the process that starts its container (and waits for it), whether that
// is surplus, and when it was written: a run plans its refill's starts, and the detached process
// that starts them takes them over within k_handover_ms.
void write_reservation(const std::filesystem::path& path, bool surplus);

std::filesystem::path reserve_start(const std::filesystem::path& dir, bool surplus);

void release_starts(const std::vector<std::filesystem::path>& starts);

// The starts pending in dir; a reservation whose process is gone (a refill killed) is removed.
PendingStarts pending_starts(const std::filesystem::path& dir);

// Waits until no start is pending in dir, for k_pending_patience_ms at most.
void wait_for_pending_starts(const std::filesystem::path& dir);

// Wakes a claim that waits when an entry is published or a start given up in dir.
UniqueFd watch_directory(const std::filesystem::path& dir);

// Until the watch sees a change, 20 ms pass (a start's process may die silently) or until_ms.
void wait_for_change(const UniqueFd& watch, int64_t until_ms);

std::filesystem::path demand_path(const std::string& key);

PoolDemand read_demand(const std::string& key);

void write_demand(const std::string& key, const PoolDemand& demand);

// How many containers at the run's memory limit fit in the memory the host has available now.
int64_t memory_room(const Policy& policy);

// Marks a claim that had to wait for a start: its refill then grows the target.
void mark_waited(const std::string& run_id);

bool claim_waited(const std::string& run_id);

}  // namespace sandshim::shim
