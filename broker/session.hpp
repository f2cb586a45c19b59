#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "broker/daemon.hpp"
#include "broker/unix_socket.hpp"

namespace sandshim::broker {

// What a session is told of its request before reading it.
struct SessionSetup {
  int request_timeout_ms = 10'000;
  std::string refusal;  // non-empty: answer the request with this line and 125, run nothing
};

// A session forked before its connection comes (its worker opens the broker's audit store
// meanwhile, off any caller's wait). Handed a connection, it reads the request, serves it in its
// worker for the peer, relays the client's signals and answers with the exit status.
class SpareSession {
 public:
  // nullopt when no process or descriptor was left (said in the log).
  static std::optional<SpareSession> fork(int request_timeout_ms);

  pid_t pid() const { return m_pid; }
  // Gives the session its connection (the daemon keeps its own copy until it closes it) and the
  // refusal, if any; false when the session is gone.
  bool hand_over(int connection, const std::string& refusal);

 private:
  SpareSession(pid_t pid, UniqueFd channel);

  pid_t m_pid;
  UniqueFd m_channel;  // the daemon's end of the handoff
};

}  // namespace sandshim::broker
