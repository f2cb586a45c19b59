#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
  std::string_view time_expression;  // when the row was finished, for prune
  std::string_view final_condition;  // a row that should be in the chain
};

extern const ChainTable k_run_chain;
extern const ChainTable k_decision_chain;

// The hash every chain starts from, and the one an empty chain ends with.
extern const std::string k_genesis_hash;

struct ChainState {
  int64_t head_seq = 0;
  std::string head_hash;
  int64_t anchor_seq = 0;  // the last pruned link; the chain continues from it
  std::string anchor_hash;
  std::optional<int64_t> anchor_ms;
};

std::optional<ChainState> read_chain_state(Database& db);

// Appends row `rowid` to the chain: the next sequence number, the previous link's hash and its own
// SHA-256 over a canonical encoding of every hashed column. The caller holds an IMMEDIATE
// transaction, so concurrent writers are chained in completion order.
void seal_row(Database& db, const ChainTable& table, int64_t rowid);

struct VerifyResult {
  bool ok = true;
  std::string problem;  // names the first row that was changed, deleted or inserted out of order
  int64_t links_checked = 0;
  ChainState state;
};

// Recomputes every link from the anchor to the head; stops at the first problem.
VerifyResult verify_chain(Database& db);

struct PruneResult {
  int64_t runs_deleted = 0;
  int64_t decisions_deleted = 0;
  int64_t anchor_seq = 0;
};

// Deletes the oldest links finished before `cutoff_ms` (a prefix of the chain, so what remains
// still verifies) and records the last deleted link as the anchor. Refuses a chain that does not
// verify, so pruning can never hide tampering.
PruneResult prune_chain(Database& db, int64_t cutoff_ms, int64_t now_ms, bool dry_run);

}  // namespace sandshim::audit
