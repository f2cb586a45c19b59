#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shim/container_run.hpp"
#include "shim/enforcement.hpp"
#include "shim/engine.hpp"
#include "shim/policy.hpp"
#include "shim/pool.hpp"
#include "shim/run_request.hpp"
#include "shim/run_spec.hpp"

namespace sandshim::shim {

// What the orchestration of a run asks of the container engine, injected so that unit tests run
// the orchestration without one (the hooks' HookEnvironment is the model). real_run_engine()
// is the engine client.
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
  // Runs the container to its end: see run_container.
  std::function<ContainerResult(const Engine&, const std::vector<std::string>&, const RunSpec&,
                                const Policy&)>
      run;
};

// The real engine: the client found on the policy's search path, its pools and its run loop.
RunEngine real_run_engine();

// The whole run: policy, checks, audit row, container, outcome. Returns the exit code to
// return to the caller; never runs anything on the host.
int run_sandboxed(const RunRequest& request, const RunEngine& engine = real_run_engine());

// `sandshim pool fill COMMAND`: starts warm containers for COMMAND's image in this workspace
// under the configured policy until pool.size wait idle; returns once they run.
int fill_pool(const RunRequest& request);

// A run the broker refused before it started (its workspace, its uid's queue): one `refused`
// row in the broker's audit with the caller's uid, and the line to the caller. Returns 125.
int record_broker_refusal(const RunRequest& request, const std::string& message);

}  // namespace sandshim::shim
