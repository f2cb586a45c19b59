#pragma once

#include <optional>

#include "broker/protocol.hpp"

namespace sandshim::broker {

// Sends the request to the broker when one answers and returns its exit status (or ends by
// the run's signal, as a shim would); nullopt when no broker answers and direct mode may run.
// A required broker that does not answer, or one that goes away mid-run, is 125 and one line.
std::optional<int> run_through_broker(Request request);

// The request of this process: its environment and, on a terminal, the terminal's size.
Request request_for(Verb verb, std::string invoked_as, std::vector<std::string> argv);

}  // namespace sandshim::broker
