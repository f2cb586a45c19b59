#include "engine/engine_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "engine/engine_api.hpp"
#include "engine/engine_slots.hpp"
#include "engine/placement.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds k_full_poll{50};

struct Placement {
  const Policy& policy;
  const EnginePing& ping;
  fs::path root;
  std::vector<std::string> failures;  // "ENDPOINT: why", from this run's pings
};

std::vector<engine::Candidate> survey(const Placement& place) {
  std::vector<engine::Candidate> candidates;
  for (const auto& endpoint : place.policy.endpoints) {
    engine::EngineSlots slots(place.root, endpoint);
    candidates.push_back({endpoint, slots.load(), slots.down(k_engine_retry_ms)});
  }
  return candidates;
}

// The engine at `endpoint` of engine.endpoints, located as if engine.endpoint named it alone.
Engine engine_at(const Policy& policy, const std::string& endpoint) {
  Policy one = policy;
  one.endpoint = endpoint;
  one.endpoints.clear();
  return locate_engine(one);
}

// The engine at `endpoint` with a slot held, when one is free and the engine answers.
std::optional<Engine> try_engine(Placement& place, const std::string& endpoint) {
  engine::EngineSlots slots(place.root, endpoint);
  UniqueFd slot = slots.take(place.policy.engine_max_runs);
  if (!slot.valid()) {
    return std::nullopt;  // another run took the last one meanwhile
  }
  Engine engine = engine_at(place.policy, endpoint);
  if (auto failure = place.ping(engine)) {
    slots.mark_down();
    place.failures.push_back(endpoint + ": " + *failure);
    return std::nullopt;
  }
  slots.mark_up();
  engine.slot = std::make_shared<UniqueFd>(std::move(slot));
  return engine;
}

std::string none_answers(const Placement& place) {
  std::string why = place.failures.empty() ? "each failed a ping less than " +
                                                 std::to_string(k_engine_retry_ms / 1000) + " s ago"
                                           : join(place.failures, "; ");
  return "no engine of engine.endpoints answers (" + why + "); start one, or check the list";
}

std::string all_full(const Policy& policy) {
  return "every engine of engine.endpoints that answers runs engine.max_runs = " +
         std::to_string(policy.engine_max_runs) + " runs from this machine, still after " +
         format_duration_ms(policy.engine_place_wait_ms) + " (engine.place_wait)";
}

}  // namespace

std::optional<std::string> ping_engine(const Engine& engine) {
  auto api = engine_api(engine, k_engine_ping_timeout);
  if (!api) {
    return std::nullopt;
  }
  engine::Reply reply = api->ping();
  return reply.ok() ? std::nullopt : std::optional(reply.describe());
}

Engine place_engine(const Policy& policy, const EnginePing& ping, const fs::path& root) {
  if (policy.endpoints.empty()) {
    return locate_engine(policy);
  }
  Placement place{policy, ping, root.empty() ? engine::engine_slots_root() : root, {}};
  const auto deadline = Clock::now() + std::chrono::milliseconds(policy.engine_place_wait_ms);
  const auto rotation = static_cast<size_t>(::getpid());
  while (true) {
    for (size_t i : engine::placement_order(survey(place), policy.engine_max_runs, rotation)) {
      if (auto engine = try_engine(place, policy.endpoints[i])) {
        return *engine;
      }
    }
    if (engine::all_down(survey(place))) {
      throw Fatal(none_answers(place));
    }
    if (Clock::now() >= deadline) {
      throw Fatal(all_full(policy));
    }
    std::this_thread::sleep_for(k_full_poll);
  }
}

std::vector<engine::EngineHealth> survey_engines(const Policy& policy, const EnginePing& ping,
                                                 const fs::path& root) {
  const fs::path slots_root = root.empty() ? engine::engine_slots_root() : root;
  std::vector<engine::EngineHealth> engines;
  for (const auto& endpoint : policy.endpoints) {
    engine::EngineHealth health{endpoint, engine::EngineSlots(slots_root, endpoint).load(), {}};
    try {
      health.failure = ping(engine_at(policy, endpoint)).value_or("");
    } catch (const std::exception& e) {
      health.failure = first_line_of(e.what());
    }
    engines.push_back(std::move(health));
  }
  return engines;
}

int64_t answering(const std::vector<engine::EngineHealth>& engines) {
  return std::count_if(engines.begin(), engines.end(),
                       [](const engine::EngineHealth& engine) { return engine.failure.empty(); });
}

std::string engines_line(const std::vector<engine::EngineHealth>& engines, int64_t max_runs) {
  std::vector<std::string> parts;
  for (const auto& engine : engines) {
    parts.push_back(engine.endpoint + (engine.failure.empty()
                                           ? " " + std::to_string(engine.load) + " in flight"
                                           : " does not answer: " + engine.failure));
  }
  return std::to_string(answering(engines)) + " of " + std::to_string(engines.size()) +
         " answer (" +
         (max_runs > 0 ? "engine.max_runs = " + std::to_string(max_runs) : "no engine.max_runs") +
         "): " + join(parts, "; ");
}

}  // namespace sandshim::shim
