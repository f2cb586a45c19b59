#include "audit/chain.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "audit/chain_detail.hpp"
#include "audit/encoding.hpp"
#include "audit/run_fields.hpp"
#include "audit/time_spec.hpp"
#include "common/process.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

using namespace chain_detail;

const ChainTable k_run_chain{
    "run",
    "runs",
    "run_id",
    k_run_hashed_columns.view(),
    "",
    "COALESCE(end_ms, start_ms)",
    "status != 'running'",
    k_run_added_columns.view(),
};

const ChainTable k_decision_chain{
    "decision",
    "decisions",
    "decision_id",
    "decision_id, time_ms, agent, event, session_id, tool_use_id, cwd, original_command, "
    "rewritten_command, decision, reason, rule, payload_bytes, exit_code, completed_ms, "
    "tool_response_tail, chain_seq, prev_hash, answer, permission_mode, outcome",
    "uid",
    "COALESCE(completed_ms, time_ms)",
    "decision = 'deny' OR completed_ms IS NOT NULL",
    "answer, permission_mode, outcome",  // schema 3
};

const std::string k_genesis_hash(64, '0');

namespace {

void append_length(std::string& out, uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out += static_cast<char>((value >> shift) & 0xff);
  }
}

// One value, typed: 'N' null, 'I' 8-byte big-endian integer, 'R' IEEE double bits, 'T' text,
// 'B' blob (both length-prefixed).
void append_value(std::string& out, const SqlValue& value) {
  if (std::holds_alternative<std::monostate>(value)) {
    out += 'N';
  } else if (const auto* number = std::get_if<int64_t>(&value)) {
    out += 'I';
    append_length(out, static_cast<uint64_t>(*number));
  } else if (const auto* real = std::get_if<double>(&value)) {
    out += 'R';
    append_length(out, std::bit_cast<uint64_t>(*real));
  } else {
    const auto* text = std::get_if<std::string>(&value);
    const std::string& bytes = text != nullptr ? *text : std::get<Blob>(value).bytes;
    out += text != nullptr ? 'T' : 'B';
    append_length(out, bytes.size());
    out += bytes;
  }
}

int count_columns(std::string_view list) {
  return list.empty() ? 0 : static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
}

std::string encoding_start(std::string_view kind, bool keyed) {
  std::string encoding(keyed ? std::string("sandshim-audit-chain-v2\0", 24)
                             : std::string("sandshim-audit-chain-v1\0", 24));
  encoding += kind;
  encoding += '\0';
  return encoding;
}

void append_column(std::string& encoding, const ChainTable& table, const std::string& name,
                   const SqlValue& value) {
  if (std::holds_alternative<std::monostate>(value) && is_added_column(table, name)) {
    return;  // a row chained before the column existed keeps its hash
  }
  encoding += name;
  encoding += '\0';
  append_value(encoding, value);
}

std::string digest(const std::string& encoding, const ChainKey* key) {
  return key != nullptr ? key->mac(encoding) : sha256_hex(encoding);
}

}  // namespace

namespace chain_detail {

const ChainTable* const k_chain_tables[2] = {&k_run_chain, &k_decision_chain};

// The hash of a link over its canonical encoding: a versioned domain tag, the kind, then every
// hashed column as name, NUL, typed value. Reading the row back from SQLite makes writer and
// verifier agree. `names` are the statement's column names from `first_column` on; the row holds
// the table's hashed columns, then its keyed ones. Unkeyed links (v1) are SHA-256 over the hashed
// columns; keyed links (v2) are HMAC-SHA256 under `key` over all of them.
std::string link_hash(const ChainTable& table, const Statement& row, int first_column,
                      const std::vector<std::string>& names, const ChainKey* key) {
  std::string encoding = encoding_start(table.kind, key != nullptr);
  int end = key != nullptr ? row.column_count() : first_column + hashed_column_count(table);
  for (int column = first_column; column < end; ++column) {
    append_column(encoding, table, names[static_cast<size_t>(column - first_column)],
                  row.column(column));
  }
  return digest(encoding, key);
}

// The hashed columns, then the keyed ones: what every link statement selects.
std::string link_columns(const ChainTable& table) {
  std::string columns(table.hashed_columns);
  if (!table.keyed_columns.empty()) {
    columns += ", " + std::string(table.keyed_columns);
  }
  return columns;
}

std::vector<std::string> names_from(const Statement& row, int first_column) {
  std::vector<std::string> names;
  for (int column = first_column; column < row.column_count(); ++column) {
    names.push_back(row.column_name(column));
  }
  return names;
}

std::string table_sql(const ChainTable& table, std::string_view sql) {
  std::string result(sql);
  for (size_t at = result.find("$T"); at != std::string::npos; at = result.find("$T")) {
    result.replace(at, 2, table.table);
  }
  return result;
}

}  // namespace chain_detail

namespace {

// A chain that sandshim itself could not have left behind: someone edited the file.
[[noreturn]] void broken_chain(const Database& db, const std::string& what) {
  throw Fatal("audit database " + quoted(db.path().string()) + ": cannot " + what +
              "; fix: run `sandshim audit verify` to see what was edited");
}

}  // namespace

std::optional<ChainState> read_chain_state(Database& db) {
  auto select = db.cached(
      "SELECT head_seq, head_hash, anchor_seq, anchor_hash, anchor_ms, chain_id, key_id, "
      "keyed_from_seq, state_mac FROM chain_state WHERE id = 1",
      "read the chain head");
  if (!select->step()) {
    return std::nullopt;
  }
  ChainState state;
  state.head_seq = select->column_int(0);
  state.head_hash = select->column_text(1);
  state.anchor_seq = select->column_int(2);
  state.anchor_hash = select->column_text(3);
  if (!select->column_is_null(4)) {
    state.anchor_ms = select->column_int(4);
  }
  state.chain_id = select->column_text(5);
  if (!select->column_is_null(6)) {
    state.key_id = select->column_text(6);
    state.keyed_from_seq = select->column_int(7);
  }
  state.state_mac = select->column_text(8);
  select->run();
  return state;
}

namespace chain_detail {

// The HMAC over everything in chain_state: the head, the anchor and where keying began.
std::string state_mac_of(const ChainState& state, const ChainKey& key) {
  std::string message("sandshim-audit-state-v1", 23);
  for (const std::string& part :
       {state.chain_id, state.key_id.value_or(""), std::to_string(state.keyed_from_seq),
        std::to_string(state.head_seq), state.head_hash, std::to_string(state.anchor_seq),
        state.anchor_hash, state.anchor_ms ? std::to_string(*state.anchor_ms) : std::string()}) {
    message += '\0';
    message += part;
  }
  return key.mac(message);
}

}  // namespace chain_detail

namespace {

void write_state_mac(Database& db, const ChainKey& key) {
  auto state = read_chain_state(db);
  auto update =
      db.cached("UPDATE chain_state SET state_mac = ? WHERE id = 1", "seal the chain head");
  update->bind(1, state_mac_of(*state, key)).run();
}

}  // namespace

void adopt_key(Database& db, const ChainKey& key) {
  auto known = read_chain_state(db);
  if (known && known->keyed() && *known->key_id == key.id()) {
    return;  // the usual case: no write lock
  }
  Transaction transaction(db, Transaction::Mode::immediate);
  auto state = read_chain_state(db);
  if (!state) {
    broken_chain(db, "key the chain: the chain_state row is missing");
  }
  if (state->keyed()) {
    if (*state->key_id != key.id()) {
      throw Fatal("audit database " + quoted(db.path().string()) +
                  ": its chain is keyed with key " + *state->key_id + ", not with " + key.id() +
                  " (audit.key_file); fix: restore the key file it was written with");
    }
    return;
  }
  Statement keyed(db, "UPDATE chain_state SET key_id = ?, keyed_from_seq = head_seq + 1",
                  "key the chain");
  keyed.bind(1, key.id()).run();
  write_state_mac(db, key);
  transaction.commit();
}

namespace {

// The hash of one row as it is stored now.
std::string hash_row(Database& db, const ChainTable& table, int64_t rowid, const ChainKey* key) {
  auto row = db.cached("SELECT " + link_columns(table) + table_sql(table, " FROM $T WHERE id = ?"),
                       "read the row to chain");
  row->bind(1, rowid);
  if (!row->step()) {
    broken_chain(db, "chain the row: it vanished");
  }
  std::string hash = link_hash(table, *row, 0, names_from(*row, 0), key);
  row->run();
  return hash;
}

}  // namespace

ChainLink next_link(Database& db, const ChainKey* key) {
  auto state = read_chain_state(db);
  if (!state) {
    broken_chain(db, "chain the row: the chain_state row is missing");
  }
  if (state->keyed() && key == nullptr) {
    broken_chain(db,
                 "chain the row: the chain is keyed and this writer has no key (only the "
                 "broker writes a keyed audit)");
  }
  int64_t seq = state->head_seq + 1;
  return ChainLink{std::move(*state), seq};
}

AnchorEntry seal_linked_row(Database& db, const ChainTable& table, int64_t rowid,
                            const ChainLink& link, const ChainKey* key) {
  std::string hash = hash_row(db, table, rowid, link.state.keyed_at(link.seq) ? key : nullptr);
  auto seal =
      db.cached(table_sql(table, "UPDATE $T SET row_hash = ? WHERE id = ?"), "seal the row");
  seal->bind(1, hash).bind(2, rowid).run();
  ChainState head = link.state;
  head.head_seq = link.seq;
  head.head_hash = hash;
  if (head.keyed()) {
    head.state_mac = state_mac_of(head, *key);
  }
  auto advance =
      db.cached("UPDATE chain_state SET head_seq = ?, head_hash = ?, state_mac = ? WHERE id = 1",
                "advance the chain head");
  advance->bind(1, head.head_seq).bind(2, head.head_hash).bind(3, head.state_mac).run();
  return AnchorEntry{AnchorEntry::Kind::head, head.chain_id, link.seq, hash, wall_clock_ms(), 0};
}

AnchorEntry seal_row(Database& db, const ChainTable& table, int64_t rowid, const ChainKey* key) {
  ChainLink next = next_link(db, key);
  auto link = db.cached(table_sql(table, "UPDATE $T SET chain_seq = ?, prev_hash = ? WHERE id = ?"),
                        "link the finished row");
  link->bind(1, next.seq).bind(2, next.prev_hash()).bind(3, rowid).run();
  return seal_linked_row(db, table, rowid, next, key);
}

namespace {

// The last link to prune: every link before the first one finished at or after the cutoff.
int64_t last_prunable_seq(Database& db, int64_t cutoff_ms, int64_t head_seq) {
  int64_t last = head_seq;
  for (const ChainTable* table : k_chain_tables) {
    Statement select(
        db,
        table_sql(*table, "SELECT MIN(chain_seq) FROM $T WHERE chain_seq IS NOT NULL AND ") +
            std::string(table->time_expression) + " >= ?",
        "find the rows to prune");
    select.bind(1, cutoff_ms);
    if (select.step() && !select.column_is_null(0)) {
      last = std::min(last, select.column_int(0) - 1);
    }
  }
  return last;
}

std::string hash_at(Database& db, int64_t seq) {
  Statement select(db,
                   "SELECT row_hash FROM runs WHERE chain_seq = ?1 UNION ALL "
                   "SELECT row_hash FROM decisions WHERE chain_seq = ?1",
                   "read the new anchor");
  select.bind(1, seq);
  if (!select.step()) {
    broken_chain(db, "prune: chain position " + std::to_string(seq) + " is missing");
  }
  return select.column_text(0);
}

int64_t delete_links_up_to(Database& db, const ChainTable& table, int64_t seq) {
  Statement erase(db,
                  table_sql(table, "DELETE FROM $T WHERE chain_seq IS NOT NULL AND chain_seq <= ?"),
                  "delete pruned rows");
  erase.bind(1, seq).run();
  return db.changes();
}

}  // namespace

PruneResult prune_chain(Database& db, int64_t cutoff_ms, int64_t now_ms, bool dry_run,
                        const VerifyOptions& options) {
  Transaction transaction(db, Transaction::Mode::immediate);
  VerifyResult verified = verify_chain(db, options);
  if (!verified.ok) {
    throw Fatal("audit database " + quoted(db.path().string()) +
                ": cannot prune: the chain does not verify (" + verified.problem +
                "); fix: investigate with `sandshim audit verify` first, pruning would hide it");
  }
  const ChainState& state = verified.state;
  int64_t last = last_prunable_seq(db, cutoff_ms, state.head_seq);
  PruneResult result{0, 0, state.anchor_seq, state.anchor_hash, state.chain_id};
  if (last <= state.anchor_seq) {
    return result;
  }
  std::string anchor_hash = hash_at(db, last);
  result = PruneResult{delete_links_up_to(db, k_run_chain, last),
                       delete_links_up_to(db, k_decision_chain, last), last, anchor_hash,
                       state.chain_id};
  Statement anchor(db, "UPDATE chain_state SET anchor_seq = ?, anchor_hash = ?, anchor_ms = ?",
                   "record the chain anchor");
  anchor.bind(1, last).bind(2, anchor_hash).bind(3, now_ms).run();
  if (state.keyed()) {
    write_state_mac(db, *options.key);
  }
  if (!dry_run) {
    transaction.commit();
  }
  return result;
}

std::vector<std::string> link_column_names(const ChainTable& table) {
  std::string columns = link_columns(table);
  std::replace(columns.begin(), columns.end(), ',', ' ');
  return split_words(columns);
}

int hashed_column_count(const ChainTable& table) {
  return count_columns(table.hashed_columns);
}

std::string link_hash_of(const ChainTable& table, const std::vector<SqlValue>& values,
                         const ChainKey* key) {
  std::vector<std::string> names = link_column_names(table);
  size_t end = key != nullptr ? names.size() : static_cast<size_t>(hashed_column_count(table));
  std::string encoding = encoding_start(table.kind, key != nullptr);
  for (size_t column = 0; column < end && column < values.size(); ++column) {
    append_column(encoding, table, names[column], values[column]);
  }
  return digest(encoding, key);
}

bool is_added_column(const ChainTable& table, std::string_view column) {
  for (size_t at = 0; at < table.added_columns.size();) {
    size_t end = std::min(table.added_columns.find(", ", at), table.added_columns.size());
    if (table.added_columns.substr(at, end - at) == column) {
      return true;
    }
    at = end + 2;
  }
  return false;
}

std::string chain_state_mac(const ChainState& state, const ChainKey& key) {
  return state_mac_of(state, key);
}

}  // namespace sandshim::audit
