#include "engine/placement.hpp"

#include <algorithm>

namespace sandshim::engine {

namespace {

bool eligible(const Candidate& c) {
  return !c.pinned_out && !c.down && (c.cap == 0 || c.load < c.cap);
}

// The cap an engine without one is measured against: the largest of the engines that carry the
// pin (down or full ones too, so it does not move with their state), else 1.
int64_t cap_for_uncapped(const std::vector<Candidate>& candidates) {
  int64_t largest = 1;
  for (const auto& c : candidates) {
    if (!c.pinned_out) {
      largest = std::max(largest, c.cap);
    }
  }
  return largest;
}

}  // namespace

std::vector<size_t> placement_order(const std::vector<Candidate>& candidates) {
  std::vector<size_t> order;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (eligible(candidates[i])) {
      order.push_back(i);
    }
  }
  const int64_t uncapped = cap_for_uncapped(candidates);
  auto cap = [&](size_t i) { return candidates[i].cap == 0 ? uncapped : candidates[i].cap; };
  // a.load / cap(a) < b.load / cap(b), in whole numbers (caps are at most 4096).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return candidates[a].load * cap(b) < candidates[b].load * cap(a);
  });
  return order;
}

bool all_down(const std::vector<Candidate>& candidates) {
  return std::all_of(candidates.begin(), candidates.end(),
                     [](const Candidate& c) { return c.pinned_out || c.down; });
}

}  // namespace sandshim::engine
