#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/anchor.hpp"
#include "audit/chain_key.hpp"
#include "audit/sqlite.hpp"

namespace sandshim::audit {

// A table whose finished rows are links of the one audit chain. Runs and hook decisions share a
// single chain ordered by `chain_seq`, so deleting either kind breaks it and the chain gives one
// order of events for the whole file.
struct ChainTable {
  std::string_view kind;             // hashed into every link, so a link cannot move tables
  std::string_view table;            // the SQL table
  std::string_view id_column;        // what messages name the row by
  std::string_view hashed_columns;   // every column but `id` and `row_hash`, in a fixed order
  std::string_view keyed_columns;    // columns of schema 3 that keyed links cover too
  std::string_view time_expression;  // when the row was finished, for prune
  std::string_view final_condition;  // a row that should be in the chain
  // Columns added after the encoding was fixed: hashed only when not null, so a row chained
  // before its table had them keeps its hash.
  std::string_view added_columns;
};

// Whether `column` of `table` is hashed only when not null (ChainTable::added_columns).
bool is_added_column(const ChainTable& table, std::string_view column);

extern const ChainTable k_run_chain;
extern const ChainTable k_decision_chain;

// The hash every chain starts from, and the one an empty chain ends with.
extern const std::string k_genesis_hash;

struct ChainState {
  int64_t head_seq = 0;
  std::string head_hash;
  int64_t anchor_seq = 0;  // the last pruned link; the chain continues from it
  std::string anchor_hash;
  std::optional<int64_t> anchor_ms = std::nullopt;
  std::string chain_id = {};                         // names this database in the anchor log
  std::optional<std::string> key_id = std::nullopt;  // the key's id once the chain is keyed
  int64_t keyed_from_seq = 0;                        // links from here on are HMAC-SHA256 (0: none)
  std::string state_mac = {};  // HMAC of this row, so head and anchor cannot move

  bool keyed() const { return key_id.has_value(); }
  bool keyed_at(int64_t seq) const { return keyed() && seq >= keyed_from_seq; }
};

std::optional<ChainState> read_chain_state(Database& db);

// The columns a link of `table` is computed over, in order: the hashed ones, then the keyed ones
// (hashed_column_count of them are hashed by unkeyed links).
std::vector<std::string> link_column_names(const ChainTable& table);
int hashed_column_count(const ChainTable& table);

// The link of a row given its values in link_column_names order, as verify computes it from the
// database (HMAC-SHA256 under `key` for a keyed position, else SHA-256): for a row that left the
// database in an export.
std::string link_hash_of(const ChainTable& table, const std::vector<SqlValue>& values,
                         const ChainKey* key);

// The HMAC that seals chain_state (head, anchor, where keying began) under `key`.
std::string chain_state_mac(const ChainState& state, const ChainKey& key);

// Makes the chain keyed from its next link on, the first time a writer opens it with a key;
// refuses a key other than the one it was keyed with.
void adopt_key(Database& db, const ChainKey& key);

// The chain position the next finished row takes, and the head it follows. Read inside the
// writer's IMMEDIATE transaction; refuses a keyed chain to a writer without its key.
struct ChainLink {
  ChainState state;  // as it was before this link
  int64_t seq = 0;
  const std::string& prev_hash() const { return state.head_hash; }
};
ChainLink next_link(Database& db, const ChainKey* key);

// Seals row `rowid`, whose chain_seq and prev_hash its writer already set from `link` (in the
// statement that finished it, so the row is written once less): hashes it as stored, writes
// row_hash and advances the head (with its HMAC when keyed). Returns the new head.
AnchorEntry seal_linked_row(Database& db, const ChainTable& table, int64_t rowid,
                            const ChainLink& link, const ChainKey* key);

// Appends row `rowid` to the chain: the next sequence number, the previous link's hash and its own
// hash over a canonical encoding of every hashed column (HMAC-SHA256 under `key` once the chain is
// keyed, SHA-256 before). The caller holds an IMMEDIATE transaction, so concurrent writers are
// chained in completion order. Returns the new head, for the anchor log.
AnchorEntry seal_row(Database& db, const ChainTable& table, int64_t rowid,
                     const ChainKey* key = nullptr);

// What verify found, so tests and tools need not parse the text.
enum class ChainFault {
  none,
  damaged,        // SQLite's own check failed
  missing_state,  // the chain_state row is gone
  no_key,         // the chain is keyed and this reader has no key
  wrong_key,      // keyed with another key
  changed,        // a row's hash does not match its content
  deleted,        // chain positions are missing
  inserted,       // a row out of order, or finished but outside the chain
  relinked,       // a link does not follow the one before it
  truncated,      // rows after the head, or after an anchored head, are gone
  rechained,      // the anchor log recorded another hash at a position: recomputed links
  anchor_moved,   // the pruned anchor was not set by prune
  replaced,       // the anchor log belongs to another chain: the file was deleted or replaced
  state_edited,   // the chain_state row's HMAC does not match
  anchor_junk,    // the anchor log holds a line its chain's writer did not write
};

std::string to_string(ChainFault fault);

struct VerifyOptions {
  const ChainKey* key = nullptr;      // checks keyed links; without it keyed chains are no_key
  std::filesystem::path anchor_file;  // compared with the database when set
};

struct VerifyResult {
  bool ok = true;
  ChainFault fault = ChainFault::none;
  std::string problem;  // names the first bad row: what was expected and what was found
  int64_t links_checked = 0;
  ChainState state;
  int64_t anchored_heads = 0;  // anchor log lines about this chain that were checked
  std::string assurance;       // what this verify could and could not prove
};

// Recomputes every link from the anchor to the head, then compares the anchor log; stops at the
// first problem.
VerifyResult verify_chain(Database& db, const VerifyOptions& options = {});

struct PruneResult {
  int64_t runs_deleted = 0;
  int64_t decisions_deleted = 0;
  int64_t anchor_seq = 0;
  std::string anchor_hash;
  std::string chain_id;
};

// Deletes the oldest links finished before `cutoff_ms` (a prefix of the chain, so what remains
// still verifies) and records the last deleted link as the anchor (and seals it under `key`).
// Refuses a chain that does not verify, so pruning can never hide tampering.
PruneResult prune_chain(Database& db, int64_t cutoff_ms, int64_t now_ms, bool dry_run,
                        const VerifyOptions& options = {});

}  // namespace sandshim::audit
