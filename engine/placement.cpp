#include "engine/placement.hpp"

#include <algorithm>

namespace sandshim::engine {

std::vector<size_t> placement_order(const std::vector<Candidate>& candidates, size_t rotation) {
  const size_t n = candidates.size();
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i) {
    const Candidate& c = candidates[(i + rotation) % n];
    if (!c.down && (c.cap == 0 || c.load < c.cap)) {
      order.push_back((i + rotation) % n);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return candidates[a].load < candidates[b].load; });
  return order;
}

bool all_down(const std::vector<Candidate>& candidates) {
  return std::all_of(candidates.begin(), candidates.end(),
                     [](const Candidate& c) { return c.down; });
}

}  // namespace sandshim::engine
