#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::audit {

// The system user the broker runs as: with root, the audit's administrators.
inline constexpr const char* k_broker_user = "sandshim";

// Who reads the audit: which rows they see and whether they administer it (prune, sql).
struct Viewer {
  std::optional<uint32_t> only_uid;  // rows of this uid only; nullopt: every row
  bool administrator = false;        // root or the broker's user: may prune and run sql

  // Direct mode: every row of the file the process can read; root and the broker's user
  // (k_broker_user) administer it.
  static Viewer this_process();
  // The broker's view of a caller identified by SO_PEERCRED: their own rows, unless they are
  // root or `broker_uid`.
  static Viewer caller(uint32_t uid, uint32_t broker_uid);
};

// Where `audit` reads from and as whom. key_file and anchor_file apply to configured_db only
// (verify and prune also take --key and --anchor for another file).
struct AuditContext {
  std::filesystem::path configured_db;  // the policy's audit.db; empty: the default
  std::filesystem::path key_file;       // audit.key_file: verify and prune read it when they can
  std::filesystem::path anchor_file;    // audit.anchor_file: verify compares, prune appends
  Viewer viewer = Viewer::this_process();
};

// The same as audit_main below, for the broker and the CLI with the whole context.
int audit_main(const std::vector<std::string>& args, const AuditContext& context, std::ostream& out,
               bool out_is_tty, bool color = false);

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

// Whether `sandshim audit ARGS` names files or destinations of its own (--export, --output,
// --socket, --syslog, --follow, --key-dir): it runs as the caller, never in the broker, which
// would open them with its rights.
bool runs_as_caller(const std::vector<std::string>& args);

// `sandshim audit` and each of its commands, as --help shows them: for the completions and the
// man page.
std::vector<CommandDoc> command_docs();

}  // namespace sandshim::audit
