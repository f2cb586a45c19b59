#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/enforcement.hpp"
#include "engine/engine.hpp"
#include "engine/engine_create.hpp"
#include "policy/policy.hpp"
#include "run/container_run.hpp"
#include "run/run_request.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// What a warm pool did when asked to fill: the containers it started, and its key.
struct WarmFill {
  int started = 0;
  std::string key;
};

// What the orchestration of a run asks of the container engine and its warm pool, injected so
// that the run knows neither (unit tests run the orchestration without an engine; the hooks'
// HookEnvironment is the model). pool/run_engine.hpp's real_run_engine() is the real one.
struct RunEngine {
  // The engine client of this policy; throws Fatal with the fix when there is none.
  std::function<Engine(const Policy&)> locate;
  // What the engine's cgroups enforce; throws EngineInfoError or Fatal.
  std::function<EngineFacts(const Engine&)> facts;
  // A warm container for runs of this spec (pool.size > 0), nullopt: the run goes cold.
  std::function<std::optional<PoolClaim>(const Engine&, const Policy&, const RunSpec&)> claim_warm;
  // Starts what a claim will ask the engine (the image's id) before the audit opens; may be
  // empty (nothing to prefetch).
  std::function<void(const Engine&, const std::string& image)> prefetch_warm;
  // Replaces `claimed` (empty: none was) in the background.
  std::function<void(const Engine&, const Policy&, const RunSpec&, const std::string& claimed)>
      refill_warm;
  // Starts containers until the pool of this spec is full (`sandshim pool fill`).
  std::function<WarmFill(const Engine&, const Policy&, const RunSpec&)> fill_warm;
  // Runs the container to its end: see run_container.
  std::function<ContainerResult(const Engine&, const EngineCall&, const RunSpec&, const Policy&)>
      run;
};

// Whether an agent's whole shell command (`sandshim -c`, `--wrap-shell`) may write the workspace
// under this policy: rw or wrap, on an engine that is certainly local.
bool wrap_shell_writes(const Policy& policy);

// The whole run: policy, checks, audit row, container, outcome. Returns the exit code to
// return to the caller; never runs anything on the host.
int run_sandboxed(const RunRequest& request, const RunEngine& engine);

// The Engine API create a cold run of `request` would send, and nothing else: no audit, no
// container (bench/api_floor.cpp times the API client alone on it). Throws Fatal or Refusal as
// the run would refuse.
ApiCreate cold_api_create(const RunRequest& request, const RunEngine& engine);

// `sandshim pool fill COMMAND`: starts warm containers for COMMAND's image in this workspace
// under the configured policy until pool.size wait idle; returns once they run.
int fill_pool(const RunRequest& request, const RunEngine& engine);

// A broker's worker, before its request comes: the audit store its system file names, opened
// (nullptr when the file does not load or the store does not open: the run then opens its own
// and says why).
std::shared_ptr<PreopenedStore> preopen_broker_store(const std::filesystem::path& system_file);

// The store the broker's worker opened before the request, when the run's options name the same
// database and anchor (the system file alone names them: user texts may only tighten) with the
// same key (the options read it again: a key replaced since is not the held one), else nullptr.
// Taken once.
std::unique_ptr<audit::Store> take_preopened_store(const RunRequest& request,
                                                   const audit::StoreOptions& options);

// A run the broker refused before it started (its workspace, its uid's queue): one `refused`
// row in the broker's audit with the caller's uid, and the line to the caller. Returns 125.
int record_broker_refusal(const RunRequest& request, const std::string& message);

}  // namespace sandshim::shim
