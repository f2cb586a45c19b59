#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/chain_key.hpp"
#include "audit/connection_record.hpp"
#include "audit/decision_record.hpp"
#include "audit/liveness.hpp"
#include "audit/run_record.hpp"

namespace sandshim::audit {

class Database;
class Statement;
class Transaction;

struct StoreOptions {
  std::filesystem::path path;
  std::chrono::milliseconds busy_timeout{5000};
  bool read_only = false;
  bool create = true;  // a missing file is created (never when read_only)
  // The broker's: links are HMAC-SHA256 under this key from the first keyed open on. Without
  // it (direct mode) the chain stays unkeyed, and a keyed file is refused for writing.
  std::optional<ChainKey> key = std::nullopt;
  bool adopt_key = true;  // false: use the key only if the chain is keyed already (prune)
  // The broker's: every committed chain head is appended to this root-owned append-only file.
  std::filesystem::path anchor_file = {};
};

// The SQLite audit database. Every method throws sandshim::Fatal (exit 125) with one clear line
// when the database cannot be opened or written, so the caller can fail closed.
class Store {
 public:
  // Creates the directory (mode 700) and the file (mode 600) when missing, switches to WAL and
  // brings the schema forward; read-only opens never create anything.
  static Store open(const StoreOptions& options);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  // Step one: the row exists, status `running`, before any container starts. The store notes
  // record.pid's boot id and start ticks, so a dead shim is told from a reused pid later.
  void begin_run(const RunRecord& record);
  // Step two: the outcome, chained to the previous completed row.
  void complete_run(const RunRecord& record);
  // A refused or failed run that never started: one complete row in one step.
  void record_finished(const RunRecord& record);

  // The connections of a run's egress proxy, in one transaction: written before the run's row
  // is completed, so a completed run's connections are all there.
  void record_connections(const std::vector<ConnectionRecord>& connections);

  // Marks `running` rows of this host whose shim is gone as `abandoned` (and chains them), so a
  // killed shim never leaves a run that looks in progress forever. Returns how many it marked.
  size_t mark_abandoned_runs(const ShimLiveness& is_alive = shim_is_alive);

  // Records a hook decision and returns its id (made when the record has none). A final decision
  // (deny, or one whose completion is known) is chained at once; others when completed.
  std::string record_decision(const DecisionRecord& record);
  // Attaches a PostToolUse outcome to the latest unfinished decision of `uid` for `tool_use_id`
  // and chains it. False when no such decision waits (the agent ran no PreToolUse hook, it was
  // sealed, or it is another user's: a broker's caller completes only its own rows).
  bool complete_decision(const std::string& tool_use_id, const DecisionCompletion& completion,
                         uint32_t uid);
  // The tool-use id of the newest unfinished decision of this agent's session (any of its
  // sessions when `session_id` is "") for exactly this command ("" when none): how a run that
  // only knows its command joins its decision. With
  // `uid`, only that user's decisions (a broker's caller joins only its own rows).
  std::string pending_tool_use_id(const std::string& agent, const std::string& session_id,
                                  const std::string& command,
                                  std::optional<uint32_t> uid = std::nullopt);
  // Chains decisions that never got a completion (denied by the user, hook not installed), so
  // they cannot stay editable forever. Returns how many it sealed.
  size_t seal_pending_decisions(std::chrono::milliseconds older_than);
  // Closes every unfinished decision of `uid`'s session `session_id` of `agent` at the end of
  // its turn: a tool call that got no post-event by then never ran on its own (the agent's
  // permission system or the user refused it), so it is `not-run`, or `ran` when a sandboxed run
  // joins it. Returns how many it closed. The broker's `session_close` and direct mode both
  // close through it.
  size_t close_session_decisions(const std::string& agent, const std::string& session_id,
                                 uint32_t uid);

  // Folds the WAL into the main file (writers skip that on close, for speed), so a plain copy of
  // audit.db is complete. For `sandshim gc`; `audit prune` calls it too.
  void checkpoint();

  // Whether this store's WAL has grown past the size at which it is folded (below).
  bool wal_needs_folding() const noexcept;

  // The key and anchor log it was opened with, for verify and prune.
  const ChainKey* key() const;
  const std::filesystem::path& anchor_file() const;
  // Appends a prune's anchor to the anchor log (no-op without one).
  void anchor_prune(const std::string& chain_id, int64_t seq, const std::string& hash);

  // The connection, for queries (audit/query.hpp) and maintenance (audit/chain.hpp).
  Database& database();
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  // Closes the unfinished decisions `pending` selects (their ids) and commits.
  size_t close_selected(Statement& pending, Transaction& transaction);
  std::unique_ptr<Impl> m_impl;
};

// Whether the WAL of the database at `path` has grown past a few hundred KiB. Every process that
// opens the store rebuilds the WAL index by reading the whole WAL, and a short-lived writer (a
// shim, a hook) never restarts it, so past that size it is folded (fold_wal_of).
bool wal_needs_folding(const std::filesystem::path& path) noexcept;

// Folds the WAL of the database at `path` through a connection of its own that reads no schema,
// key or migration: what a detached process does after the writer that found the WAL large has
// closed it. A reader holding the WAL, or a failure, leaves the fold to a later writer.
void fold_wal_of(const std::filesystem::path& path) noexcept;

// The default location: $XDG_STATE_HOME/sandshim/audit.db.
std::filesystem::path default_database_path();

}  // namespace sandshim::audit
