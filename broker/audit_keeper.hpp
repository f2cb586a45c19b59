#pragma once

#include <sys/types.h>

#include <filesystem>

namespace sandshim::broker {

// Keeps one idle connection to the broker's audit database open, in a child of the daemon, for
// the daemon's life. SQLite rebuilds a WAL database's index by reading the whole WAL whenever a
// connection opens it while no other connection has it open: every run's worker used to, in
// front of its run. The connection holds no transaction, so it blocks no writer, reader or
// checkpoint. Returns the child's pid, or 0 when none could start (runs then open the
// database as before, only more slowly).
pid_t start_audit_keeper(const std::filesystem::path& db);

}  // namespace sandshim::broker
