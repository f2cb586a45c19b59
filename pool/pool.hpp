#pragma once

#include <cstdint>
#include <filesystem>
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
// replacement is started by a detached process. No container ever serves two runs. With
// pool.start = launcher (docker), the container's command is sandshim's launcher, which starts
// the run's command itself (inside/launch.cpp), far faster than an exec.
//
// State: $XDG_STATE_HOME/sandshim/pool/KEY/RUN_ID (an idle container, named sandshim-RUN_ID),
// claimed/RUN_ID (claimed by a run), KEY.lock (held while a refill of KEY starts containers).

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
};

class WarmPool {
 public:
  // The pool that serves runs of `spec` (its image, workspace and user) under `policy`.
  WarmPool(const Engine& engine, const Policy& policy, const RunSpec& spec);

  // The pool's key: a digest of the effective policy, image, workspace and user.
  const std::string& key() const { return m_key; }

  // Claims an idle container started from the image the tag names now and not yet expired;
  // nullopt when there is none (the run goes cold). Never throws.
  std::optional<PoolClaim> claim() const;

  // Forgets the claimed entry and starts containers until N wait idle, in a detached process
  // that starts once the caller has exited: the caller returns at once.
  void refill_detached(const std::string& claimed_run_id) const;

  // Removes expired or stale idle containers of this key, then starts containers until N wait
  // idle. Returns how many it started.
  int refill() const;

 private:
  std::optional<std::string> current_image_id() const;
  void ensure_pool_directories() const;
  int refill_locked() const;  // refill() under the key's lock, which the caller holds
  std::string start_container(const std::string& image_id) const;
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

// Removes every idle container of this user's pools, and their containers the engine still
// has without an entry; containers claimed by running runs are left to their runs.
int drain_pools(const Engine& engine);

// `sandshim gc`: removes idle containers past pool.idle_ttl and forgets claims past their
// deadline. Returns how many containers it removed.
int collect_pool_garbage(const Engine& engine);

}  // namespace sandshim::shim
