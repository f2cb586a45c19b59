#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "broker/daemon.hpp"
#include "broker/unix_socket.hpp"

namespace sandshim::broker {

// What a session inherits from the daemon, and must close or honour.
struct SessionSetup {
  int request_timeout_ms = 10'000;
  std::string refusal;  // non-empty: answer the request with this line and 125, run nothing
};

// Forks the session of one connection: it reads the request, runs it in a worker as the peer,
// relays the client's signals and answers with the exit status. Returns its pid (0: fork failed).
pid_t start_session(UniqueFd connection, const PeerCredentials& peer, const SessionSetup& setup,
                    const Runner& runner);

// The worker's own environment: the caller's variables, except every name that steers
// sandshim, the engine or the loader, which come from the broker's environment; HOME is the
// caller's home from the password database.
std::vector<std::string> worker_environment(const std::vector<std::string>& caller_env,
                                            const std::vector<std::string>& broker_env,
                                            const std::string& caller_home);

}  // namespace sandshim::broker
