#pragma once

#include <string>
#include <vector>

#include "broker/daemon.hpp"
#include "common/command_doc.hpp"

namespace sandshim::broker {

// `sandshim broker`: the daemon that holds the engine, the policy and the audit.
CommandDoc broker_doc();
int broker_main(const std::vector<std::string>& args);

}  // namespace sandshim::broker
