#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandshim::engine {

// One engine of engine.endpoints as placement sees it now.
struct Candidate {
  std::string endpoint;
  int64_t load = 0;   // runs in flight from this machine (held slot files)
  bool down = false;  // failed a ping less than the retry interval ago
  int64_t cap = 0;    // its max_runs= (else engine.max_runs); 0: no cap
};

// One engine of engine.endpoints as doctor and the broker's `status` report it.
struct EngineHealth {
  std::string endpoint;
  int64_t load = 0;     // runs in flight on it from this machine
  std::string failure;  // why it does not answer its ping; empty when it does
  std::string options;  // what its entry sets ("max_runs=2 label=gpu"); empty: nothing
};

// The engines a run may be placed on, best first: healthy ones under their own cap, least
// loaded first; equal loads start at `rotation` (mod the list's size) so sequential runs spread.
std::vector<size_t> placement_order(const std::vector<Candidate>& candidates, size_t rotation);

// Whether every engine is down: nothing to wait for, the run is refused at once.
bool all_down(const std::vector<Candidate>& candidates);

}  // namespace sandshim::engine
