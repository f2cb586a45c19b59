#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "audit/decision_record.hpp"
#include "broker/protocol.hpp"
#include "broker/settings.hpp"
#include "broker/unix_socket.hpp"

namespace sandshim::broker {

// Sends the request to the broker when one answers and returns its exit status (or ends by
// the run's signal, as a shim would); nullopt when no broker answers and direct mode may run.
// A required broker that does not answer, or one that goes away mid-run, is 125 and one line.
// The request is built once the connection is made: the broker forks the session that reads it
// while this process builds it.
std::optional<int> run_through_broker(const std::function<Request()>& build_request);

// A `run` request of this process: the program's argv (or `sandshim run`'s arguments), only the
// variables this caller's own policy lets into a sandbox, the informational ones typed, its
// config files' text and, on a terminal, the terminal's size.
// agent_command: RunCall::agent_command (Claude Code's eval'd command, when the run has no
// tool_use_id of its own).
Request run_request_for(std::string invoked_as, std::vector<std::string> argv,
                        std::string agent_command = "");
// `sandshim audit ARGS` on the broker's audit.
Request audit_request_for(std::vector<std::string> args);

// A hook's audit writes in broker mode: nullopt when no broker answers and the broker is not
// required (the hook writes its own store); throws one line when a required one does not answer
// or does not write. The broker adds the caller's uid (SO_PEERCRED) and its own clock.
std::optional<std::string> record_decision_through_broker(const audit::DecisionRecord& record);
// Whether the caller's own pending decision of tool_use_id was completed.
std::optional<bool> complete_decision_through_broker(const std::string& tool_use_id,
                                                     const audit::DecisionCompletion& completion);
// The agent's session is over: the broker closes the caller's own decisions of it still pending
// and answers how many (`session_close`); nullopt without a broker (not required); throws one
// line when the broker does not answer.
std::optional<size_t> close_session_through_broker(const std::string& agent,
                                                   const std::string& session_id);

// `sandshim doctor` in broker mode: who holds the socket (SO_PEERCRED of the connection, never
// a frame's word) and the broker's read-only `status`, or the line saying why there is none.
struct StatusAnswer {
  PeerCredentials broker;
  std::optional<BrokerStatus> status;
  std::string problem;
};
// nullopt when the mode is off or no broker answers at the settings' socket.
std::optional<StatusAnswer> status_through_broker(const ClientSettings& settings);

}  // namespace sandshim::broker
