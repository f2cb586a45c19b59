#include "policy/known_agents.hpp"

namespace sandshim::shim {

namespace {

std::vector<KnownAgent>& agents() {
  static std::vector<KnownAgent> known;
  return known;
}

}  // namespace

void set_known_agents(std::vector<KnownAgent> known) {
  agents() = std::move(known);
}

const std::vector<KnownAgent>& known_agents() {
  return agents();
}

}  // namespace sandshim::shim
