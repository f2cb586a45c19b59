#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "policy/policy.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// Warm mode (`pool.size = N`): for each (image, workspace, user, effective policy) up to N
// containers are started in advance with the run's own hardening, idle. A run claims one by
// renaming its entry in the pool's state directory (rename(2) is atomic: exactly one claimer
// wins), runs its command there with `exec`, and the container is removed afterwards; a
// replacement is started by a detached process. No container ever serves two runs. When draws
// come faster than refills (a run found the pool empty, or a refill was still starting), the
// key's target doubles up to the cap max(pool.size, pool.max), its starts run concurrently, and
// a run that finds the pool empty waits up to pool.claim_wait for a container being started; the
// containers above pool.size are claimable for pool.shrink_after only, and the target returns
// to pool.size once no draw came for that long. With
// pool.start = launcher (docker), the container's command is sandshim's launcher, which starts
// the run's command itself (inside/launch.cpp), far faster than an exec.
//
// State: $XDG_STATE_HOME/sandshim/pool/KEY/RUN_ID (an idle container, named sandshim-RUN_ID),
// claimed/RUN_ID (claimed by a run), KEY/.starting-N (a container being started, by the process
// the file names), KEY.demand (the key's target and its last draw), KEY.lock (held while a
// refill of KEY counts and plans its starts, and while a drain empties it).

// One idle container, as `sandshim pool status` shows it.
struct PoolEntry {
  std::string key;
  std::string run_id;
  std::string image;
  std::string image_id;
  std::string workspace;
  int64_t expires_epoch_s = 0;   // claimable until then (pool.idle_ttl after its start)
  int64_t deadline_epoch_s = 0;  // the container ends by itself by then
  std::vector<std::string> create_args;
  int64_t launcher_pid = 0;  // started with sandshim's launcher: its process, and its token
  std::string launcher_token;
  bool surplus = false;  // started above pool.size: claimable for pool.shrink_after only
};

// A key's demand: how many warm containers it aims at now, and when a run last drew on it.
struct PoolDemand {
  int64_t target = 0;
  int64_t last_draw_ms = 0;
};

// What a run did with its key's pool, as the refill after it learns.
enum class PoolDraw { none, claimed, missed };

// The most warm containers (idle or starting) a key ever holds: pool.size, or pool.max above it.
int64_t pool_cap(const Policy& policy);

// The target after `draw` at now_ms: back to pool.size after pool.shrink_after without a draw;
// doubled (pool.size + 1 at least) when the run missed or a start was still pending, up to the
// cap and to `memory_room` (containers at sandbox.memory that fit in the memory available).
PoolDemand next_pool_demand(const Policy& policy, PoolDemand demand, PoolDraw draw,
                            bool start_pending, int64_t now_ms, int64_t memory_room);

class WarmPool {
 public:
  // The pool that serves runs of `spec` (its image, workspace and user) under `policy`.
  WarmPool(const Engine& engine, const Policy& policy, const RunSpec& spec);

  // The pool's key: a digest of the effective policy, image, workspace and user.
  const std::string& key() const { return m_key; }

  // Claims an idle container started from the image the tag names now and not yet expired (the
  // soonest to expire first), waiting up to pool.claim_wait for one a refill is starting; nullopt
  // when there is none (the run goes cold). Never throws.
  std::optional<PoolClaim> claim() const;

  // Forgets the claimed entry (empty: the run missed) and plans the key's starts at once, then
  // starts them concurrently in a detached process once the caller has exited.
  void refill_detached(const std::string& claimed_run_id) const;

  // Removes expired or stale idle containers of this key, starts containers until the target
  // waits idle, and waits for the starts other refills have pending. Returns how many it started.
  int refill() const;

 private:
  struct Plan;  // the starts one refill reserved under the key's lock
  std::optional<std::string> current_image_id() const;
  void ensure_pool_directories() const;
  std::optional<PoolClaim> take_claimable(const std::string& image_id) const;
  std::optional<PoolClaim> wait_for_start(const std::string& image_id) const;
  Plan plan_starts(PoolDraw draw) const;
  void discard_unservable(const std::string& image_id) const;
  int start_planned(const Plan& plan, const std::string& image_id) const;
  // `asked_ms`: when the run asked for the refill; a drain since then wants no start.
  void start_after_caller(const Plan& plan, const std::string& claimed_run_id,
                          const std::function<void()>& wait_for_caller, int64_t asked_ms) const;
  std::string start_container(const std::string& image_id, bool surplus) const;
  bool uses_launcher() const;
  bool create_container(const RunSpec& spec, const std::vector<std::string>& labels, int64_t life_s,
                        PoolEntry& entry) const;

  const Engine& m_engine;
  const Policy& m_policy;
  RunSpec m_spec;
  std::string m_key;
};

// Asks the engine now for the id `image` names, so that a claim later in this process finds the
// answer already there (it overlaps the audit database's open); the claim still checks it.
void prefetch_pool_image_id(const Engine& engine, const std::string& image);

// The pool key of a run: equal keys mean the same confinement, mounts and user.
std::string pool_key(const Policy& policy, const RunSpec& spec);

// Idle containers of this user's pools (any key).
std::vector<PoolEntry> list_pool_entries();

// Removes every idle container of this user's pools (once the starts pending in each have
// ended), and their containers the engine still has without an entry; containers claimed by
// running runs are left to their runs.
int drain_pools(const Engine& engine);

// `sandshim gc`: removes idle containers past pool.idle_ttl and forgets claims past their
// deadline. Returns how many containers it removed.
int collect_pool_garbage(const Engine& engine);

}  // namespace sandshim::shim
