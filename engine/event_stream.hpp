#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/reply.hpp"

namespace sandshim::engine {

namespace detail {
struct Session;
}

// Which events a stream carries; every field left empty matches everything.
struct EventFilter {
  std::string type = "container";
  std::vector<std::string> containers;  // names or ids (a name may not exist yet)
  std::vector<std::string> actions;     // oom, die, destroy…
  std::vector<std::string> labels;      // label or label=value
  int64_t since_s = 0;  // replay from this unix time: events between subscribing and the
                        // engine's answer are not lost
};

// One engine event, as the stream reports it.
struct Event {
  std::string type;                               // container, image…
  std::string action;                             // oom, die, destroy…
  std::string id;                                 // the actor's id
  std::map<std::string, std::string> attributes;  // name, exitCode, labels…
  int64_t time_ns = 0;

  std::string name() const;
};

// One event from the stream's JSON line; nullopt when the line is not one.
std::optional<Event> parse_event(std::string_view line);

// GET /events with the filter, as a request target.
std::string events_target(const EventFilter& filter);

// A live event stream, read from the caller's poll loop: poll fd() for input, then
// read_available() never blocks. The subscription is sent at once and its answer read with the
// first events, so subscribing never waits on the engine (a paused engine stalls nothing);
// EventFilter::since_s replays what happened in between. Move-only; closing it unsubscribes.
class EventStream {
 public:
  EventStream();
  EventStream(EventStream&&) noexcept;
  EventStream& operator=(EventStream&&) noexcept;
  ~EventStream();

  // Whether the subscription reached the engine and it has not refused it (so far).
  bool subscribed() const;
  // Whether the engine's answer accepted it (200 and its header read).
  bool confirmed() const;
  // Why the stream failed or was refused; the answer's status once read.
  const Reply& reply() const { return m_reply; }
  // The socket to poll for input; -1 when there is none.
  int fd() const;
  // The complete events that arrived, without blocking.
  std::vector<Event> read_available();
  // Waits up to `wait` for the engine's answer to the subscription; whether it accepted it.
  bool await_confirmation(std::chrono::milliseconds wait);
  // Whether the engine ended the stream (or broke or refused it); no event follows.
  bool ended() const { return m_ended; }

 private:
  friend class ApiClient;
  struct State;
  EventStream(std::unique_ptr<State> state, Reply reply);
  void read_some(std::vector<Event>& events);
  void take_lines(std::vector<Event>& events);
  void read_refusal();
  void end(Fault fault, std::string detail);

  std::unique_ptr<State> m_state;
  Reply m_reply;
  bool m_ended = false;
};

}  // namespace sandshim::engine
