#include "pool/run_engine.hpp"

#include "engine/enforcement.hpp"
#include "engine/engine_pool.hpp"
#include "pool/pool.hpp"
#include "run/container_run.hpp"

namespace sandshim::shim {

RunEngine real_run_engine() {
  RunEngine engine;
  engine.locate = [](const Policy& policy) { return place_engine(policy); };
  engine.facts = [](const Engine& client) { return engine_facts(client, default_facts_cache()); };
  engine.claim_warm = [](const Engine& client, const Policy& policy, const RunSpec& spec) {
    return WarmPool(client, policy, spec).claim();
  };
  engine.prefetch_warm = [](const Engine& client, const std::string& image) {
    prefetch_pool_image_id(client, image);
  };
  engine.refill_warm = [](const Engine& client, const Policy& policy, const RunSpec& spec,
                          const std::string& claimed) {
    WarmPool(client, policy, spec).refill_detached(claimed);
  };
  engine.fill_warm = [](const Engine& client, const Policy& policy, const RunSpec& spec) {
    WarmPool pool(client, policy, spec);
    const int started = pool.refill();
    return WarmFill{started, pool.key()};
  };
  engine.run = run_container;
  return engine;
}

}  // namespace sandshim::shim
