#pragma once

#include <sys/types.h>

#include <string>

#include "broker/daemon.hpp"
#include "broker/unix_socket.hpp"

namespace sandshim::broker {

// What a session inherits from the daemon, and must close or honour.
struct SessionSetup {
  int request_timeout_ms = 10'000;
  std::string refusal;  // non-empty: answer the request with this line and 125, run nothing
};

// Forks the session of one connection: it reads the request, serves it in a worker for the peer,
// relays the client's signals and answers with the exit status. Returns its pid (0: fork failed).
pid_t start_session(UniqueFd connection, const PeerCredentials& peer, const SessionSetup& setup);

}  // namespace sandshim::broker
