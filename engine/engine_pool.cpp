#include "engine/engine_pool.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "engine/engine_api.hpp"
#include "engine/engine_slots.hpp"
#include "engine/placement.hpp"
#include "policy/engine_list.hpp"

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

int64_t cap_of(const Policy& policy, const PoolEngine& engine) {
  return engine.max_runs.value_or(policy.engine_max_runs);
}

std::vector<engine::Candidate> survey(const Placement& place) {
  std::vector<engine::Candidate> candidates;
  for (const auto& engine : place.policy.endpoints) {
    engine::EngineSlots slots(place.root, engine.endpoint);
    candidates.push_back({engine.endpoint, slots.load(), slots.down(k_engine_retry_ms),
                          cap_of(place.policy, engine),
                          !carries_labels(engine, place.policy.require_labels)});
  }
  return candidates;
}

// engine.name resolved (docker | podman): the client of every entry without engine=.
std::string listed_kind(const Policy& policy) {
  return resolve_engine_kind(policy.engine, policy.engine_path, policy.engine_search_path);
}

// The client an entry of engine.endpoints is run with: its engine=, else engine.name's.
std::string kind_of(const Policy& policy, const PoolEngine& entry) {
  return entry.engine.empty() ? listed_kind(policy) : entry.engine;
}

// The engine of an entry of engine.endpoints, located as if engine.endpoint named it alone
// (with its own certificates and client when it names them). engine.path is the client of
// engine.name's kind: an entry of the other kind finds its own on engine.search_path.
Engine engine_at(const Policy& policy, const PoolEngine& entry) {
  Policy one = policy;
  one.endpoint = entry.endpoint;
  if (!entry.tls_cert_path.empty()) {
    one.tls_cert_path = entry.tls_cert_path;
  }
  if (!entry.engine.empty() && entry.engine != listed_kind(policy)) {
    one.engine = entry.engine;
    one.engine_path.clear();
  }
  one.ssh_identity = entry.ssh_identity.empty() ? one.ssh_identity : entry.ssh_identity;
  one.ssh_known_hosts = entry.ssh_known_hosts.empty() ? one.ssh_known_hosts : entry.ssh_known_hosts;
  one.endpoints.clear();
  return locate_engine(one);
}

// The engine of `entry` with a slot held, when one is free and the engine answers.
std::optional<Engine> try_engine(Placement& place, const PoolEngine& entry) {
  engine::EngineSlots slots(place.root, entry.endpoint);
  UniqueFd slot = slots.take(cap_of(place.policy, entry));
  if (!slot.valid()) {
    return std::nullopt;  // another run took the last one meanwhile
  }
  Engine engine = engine_at(place.policy, entry);
  if (auto failure = place.ping(engine)) {
    slots.mark_down();
    place.failures.push_back(entry.endpoint + ": " + *failure);
    return std::nullopt;
  }
  slots.mark_up();
  engine.slot = std::make_shared<UniqueFd>(std::move(slot));
  return engine;
}

// "engine of engine.endpoints", naming the labels a pinned run needs.
std::string which_engine(const Policy& policy) {
  return policy.require_labels.empty()
             ? "engine of engine.endpoints"
             : "engine of engine.endpoints labelled " + join(policy.require_labels, "+") +
                   " (engine.require_labels)";
}

// A pin that no entry carries refuses the run at once: waiting would not change the list.
void require_pinned_engine(const Policy& policy) {
  if (std::none_of(policy.endpoints.begin(), policy.endpoints.end(),
                   [&](const PoolEngine& e) { return carries_labels(e, policy.require_labels); })) {
    throw Fatal("no " + which_engine(policy) +
                " is listed; give one label=" + join(policy.require_labels, " label=") +
                " in its entry of engine.endpoints, or change engine.require_labels");
  }
}

std::string none_answers(const Placement& place) {
  std::string why = place.failures.empty() ? "each failed a ping less than " +
                                                 std::to_string(k_engine_retry_ms / 1000) + " s ago"
                                           : join(place.failures, "; ");
  return "no " + which_engine(place.policy) + " answers (" + why +
         "); start one, or check the list";
}

// Every engine that answers is at its cap: each one's runs in flight of its cap, after the wait.
std::string all_full(const Placement& place) {
  std::vector<std::string> full;
  for (const auto& candidate : survey(place)) {
    if (!candidate.down && !candidate.pinned_out) {
      full.push_back(candidate.endpoint + " " + std::to_string(candidate.load) + " of " +
                     std::to_string(candidate.cap));
    }
  }
  return "every " + which_engine(place.policy) +
         " that answers runs its max_runs from this machine (" + join(full, "; ") +
         "), still after " + format_duration_ms(place.policy.engine_place_wait_ms) +
         " (engine.place_wait)";
}

// Without engine.endpoints a label pin cannot hold: the one engine carries no label.
Engine the_one_engine(const Policy& policy) {
  if (!policy.require_labels.empty()) {
    throw Fatal("engine.require_labels = " + join(policy.require_labels, " ") +
                " needs engine.endpoints, where engines carry labels (label=NAME)");
  }
  return locate_engine(policy);
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
    return the_one_engine(policy);
  }
  require_pinned_engine(policy);
  Placement place{policy, ping, root.empty() ? engine::engine_slots_root() : root, {}};
  const auto deadline = Clock::now() + std::chrono::milliseconds(policy.engine_place_wait_ms);
  while (true) {
    for (size_t i : engine::placement_order(survey(place))) {
      if (auto engine = try_engine(place, policy.endpoints[i])) {
        return *engine;
      }
    }
    if (engine::all_down(survey(place))) {
      throw Fatal(none_answers(place));
    }
    if (Clock::now() >= deadline) {
      throw Fatal(all_full(place));
    }
    std::this_thread::sleep_for(k_full_poll);
  }
}

std::vector<engine::EngineHealth> survey_engines(const Policy& policy, const EnginePing& ping,
                                                 const fs::path& root) {
  const fs::path slots_root = root.empty() ? engine::engine_slots_root() : root;
  std::vector<engine::EngineHealth> engines;
  for (const auto& entry : policy.endpoints) {
    PoolEngine shown = entry;
    shown.engine.clear();  // the line names each engine's kind anyway
    engine::EngineHealth health{entry.endpoint,
                                engine::EngineSlots(slots_root, entry.endpoint).load(),
                                {},
                                render_pool_options(shown),
                                kind_of(policy, entry)};
    try {
      health.failure = ping(engine_at(policy, entry)).value_or("");
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
    std::string options = engine.options.empty() ? "" : " (" + engine.options + ")";
    parts.push_back(engine.kind + "@" + engine.endpoint + options +
                    (engine.failure.empty() ? " " + std::to_string(engine.load) + " in flight"
                                            : " does not answer: " + engine.failure));
  }
  return std::to_string(answering(engines)) + " of " + std::to_string(engines.size()) +
         " answer (" +
         (max_runs > 0 ? "engine.max_runs = " + std::to_string(max_runs) : "no engine.max_runs") +
         "): " + join(parts, "; ");
}

}  // namespace sandshim::shim
