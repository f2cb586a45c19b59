#pragma once

#include <string>
#include <vector>

#include "broker/settings.hpp"

namespace sandshim::broker {

// Which mode a client of this user is in, for `sandshim doctor`: broker (a broker answers),
// required-but-missing (every run fails closed), or direct; in direct mode whether this uid
// reaches a rootful engine socket, which is root-equivalent.
struct ModeReport {
  enum class Level { ok, warn, fail } level = Level::ok;
  std::string detail;
  std::string fix;
};
// broker_answers: whether a connection to settings.socket was accepted (doctor's one connection,
// the one that asks for the broker's status).
ModeReport mode_report(const ClientSettings& settings, bool broker_answers);
// The mode line when the system file's broker settings do not read (`why`).
ModeReport unreadable_settings_report(const std::string& why);

// How this uid reaches the local engine around the broker ("member of the group docker", "may
// write /var/run/docker.sock"), each a root-equivalent door on a rootful engine; empty: none.
std::vector<std::string> engine_access();

}  // namespace sandshim::broker
