#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "engine/engine.hpp"
#include "engine/event_stream.hpp"

namespace sandshim::shim {

// What the engine's events said about one container, as far as an OOM kill is concerned.
struct OomFacts {
  bool oom = false;      // an `oom` event for the container
  bool settled = false;  // its `die` or `destroy`: its end, which an OOM comes before or just after
};

// The container's events, watched from before it is created (today's alternative, asking after
// the run, loses OOMs on a busy engine: its event buffer has moved on). Read from the run's poll
// loop; an engine without a local API socket, or one that refuses, leaves it unwatched and the
// caller asks the client after the run instead.
class OomWatch {
 public:
  OomWatch() = default;
  OomWatch(const Engine& engine, const std::string& container);

  // Whether the engine took the subscription (so far).
  bool watching() const { return m_stream.subscribed(); }
  // The stream's socket for the poll loop; -1 once nothing more can come.
  int fd() const { return m_stream.ended() ? -1 : m_stream.fd(); }
  // Reads what arrived (the poll loop saw fd() readable).
  void read_available();
  // Whether the container was OOM-killed: waits for its `oom` event at most `after_end` past the
  // report of its end (the engine may report the OOM just after the exit) and `at_most` in all;
  // nullopt when the events were not watched, or the stream broke or was never confirmed.
  std::optional<bool> oom_killed(std::chrono::milliseconds after_end,
                                 std::chrono::milliseconds at_most);
  const OomFacts& facts() const { return m_facts; }

 private:
  engine::EventStream m_stream;
  OomFacts m_facts;
};

// The facts after one event of the container.
OomFacts apply_event(OomFacts facts, const engine::Event& event);

}  // namespace sandshim::shim
