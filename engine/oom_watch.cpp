#include "engine/oom_watch.hpp"

#include <poll.h>

#include <algorithm>

#include "common/process.hpp"
#include "engine/engine_api.hpp"

namespace sandshim::shim {

namespace {

// Connecting and sending the subscription are local and immediate unless the engine's backlog
// is full; its answer is read in the poll loop.
constexpr std::chrono::milliseconds k_subscribe_timeout{1000};

// The events that end a container, in the names the engine's filter takes: podman's service
// filters on its own (died, remove; it reports them as docker's die and remove), and a filter
// naming docker's matches nothing there.
std::vector<std::string> watched_actions(const Engine& engine) {
  if (engine.dialect.is_podman()) {
    return {"oom", "died", "remove"};
  }
  return {"oom", "die", "destroy"};
}

}  // namespace

OomFacts apply_event(OomFacts facts, const engine::Event& event) {
  if (event.action == "oom") {
    facts.oom = true;
  } else if (event.action == "die" || event.action == "died" || event.action == "destroy" ||
             event.action == "remove") {
    facts.settled = true;
  }
  return facts;
}

OomWatch::OomWatch(const Engine& engine, const std::string& container) {
  auto api = engine_api(engine, k_subscribe_timeout);
  if (!api) {
    return;
  }
  engine::EventFilter filter;
  filter.containers = {container};
  filter.actions = watched_actions(engine);
  filter.since_s = wall_clock_ms() / 1000 - 1;  // covers the moment between send and answer
  m_stream = api->events(filter);
}

void OomWatch::read_available() {
  for (const auto& event : m_stream.read_available()) {
    m_facts = apply_event(m_facts, event);
  }
}

std::optional<bool> OomWatch::oom_killed(std::chrono::milliseconds after_end,
                                         std::chrono::milliseconds at_most) {
  int64_t give_up_ms = monotonic_ms() + at_most.count();
  int64_t settled_ms = -1;
  read_available();
  while (!m_facts.oom && fd() >= 0) {
    int64_t now = monotonic_ms();
    if (m_facts.settled && settled_ms < 0) {
      settled_ms = now;
    }
    int64_t until =
        settled_ms < 0 ? give_up_ms : std::min(give_up_ms, settled_ms + after_end.count());
    pollfd ready{fd(), POLLIN, 0};
    if (until <= now || ::poll(&ready, 1, static_cast<int>(until - now)) == 0) {
      break;
    }
    read_available();
  }
  if (m_facts.oom) {
    return true;
  }
  // A healthy stream that reported the end, or nothing within the grace (an exec in a warm
  // container has no end of its own to report), saw no OOM.
  if (m_facts.settled || (m_stream.confirmed() && !m_stream.ended())) {
    return false;
  }
  return std::nullopt;
}

}  // namespace sandshim::shim
