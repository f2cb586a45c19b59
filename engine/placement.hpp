#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandshim::engine {

// One engine of engine.endpoints as placement sees it now.
struct Candidate {
  std::string endpoint;
  int64_t load = 0;         // runs in flight from this machine (held slot files)
  bool down = false;        // failed a ping less than the retry interval ago
  int64_t cap = 0;          // its max_runs= (else engine.max_runs); 0: no cap
  bool pinned_out = false;  // lacks a label of engine.require_labels: never a choice
};

// One engine of engine.endpoints as doctor and the broker's `status` report it.
struct EngineHealth {
  std::string endpoint;
  int64_t load = 0;     // runs in flight on it from this machine
  std::string failure;  // why it does not answer its ping; empty when it does
  std::string options;  // its entry's settings but engine= ("max_runs=2 label=gpu"); empty: none
  std::string kind = "docker";  // engine= of its entry, else engine.name: docker | podman
};

// The engines a run may be placed on, best first: those that carry the pin, answer and are under
// their cap, by the share of their cap in flight (load / cap: one run on a cap of 4 comes before
// one run on a cap of 1), equal shares in list order, so the list's first engine is the preferred
// one. An engine without a cap counts as if it had the largest cap of the engines that carry the
// pin (1 when none has one): neither favoured over the biggest capped engine nor starved by it;
// with no cap anywhere this is the fewest runs in flight.
std::vector<size_t> placement_order(const std::vector<Candidate>& candidates);

// Whether every engine that carries the pin is down: nothing to wait for, the run is refused at
// once.
bool all_down(const std::vector<Candidate>& candidates);

}  // namespace sandshim::engine
