#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::audit {

// `sandshim audit ARGS...` (ARGS are what follows "audit"): list, show, stats, export, verify,
// prune, sql, decisions. Results go to stdout; errors are thrown as sandshim::Fatal (exit code
// inside: 2 for bad usage, 125 for an unusable database). Returns 0, or 1 when `verify` finds
// the chain broken.
int audit_main(const std::vector<std::string>& args);

// The same, with the database the policy names (`audit.db`): used when neither --db nor
// SANDSHIM_AUDIT_DB is given.
int audit_main(const std::vector<std::string>& args, const std::filesystem::path& configured_db);

// The same, writing to `out`; `out_is_tty` picks the default format (a table for people) and
// `color` paints the table (terminal::use_color decides it for stdout).
int audit_main(const std::vector<std::string>& args, const std::filesystem::path& configured_db,
               std::ostream& out, bool out_is_tty, bool color = false);

// `sandshim audit` and each of its commands, as --help shows them: for the completions and the
// man page.
std::vector<CommandDoc> command_docs();

}  // namespace sandshim::audit
