#include "audit/chain.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "audit/encoding.hpp"
#include "audit/time_spec.hpp"
#include "common/process.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

const ChainTable k_run_chain{
    "run",
    "runs",
    "run_id",
    "run_id, status, start_ms, end_ms, duration_ms, invoked_as, argv, argv_raw, cwd, workspace, "
    "engine, image, image_digest, container_name, engine_args, policy_digest, policy_sources, "
    "limits, exit_code, signal, message, stdout_bytes, stderr_bytes, stdout_tail, stderr_tail, "
    "uid, "
    "host, pid, ppid, parent_name, agent, agent_session, tool_use_id, env_names, warm, boot_id, "
    "pid_start_ticks, chain_seq, prev_hash, limit_hit, hidden_count, hidden_globs",
    "",
    "COALESCE(end_ms, start_ms)",
    "status != 'running'",
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
};

const std::string k_genesis_hash(64, '0');

namespace {

constexpr const ChainTable* k_chain_tables[] = {&k_run_chain, &k_decision_chain};

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

// Columns added after the encoding was fixed (schema 3, 5 and 6): hashed only when not null.
bool added_after_encoding(std::string_view name) {
  return name == "answer" || name == "permission_mode" || name == "outcome" ||
         name == "limit_hit" || name == "hidden_count" || name == "hidden_globs";
}

std::string encoding_start(std::string_view kind, bool keyed) {
  std::string encoding(keyed ? std::string("sandshim-audit-chain-v2\0", 24)
                             : std::string("sandshim-audit-chain-v1\0", 24));
  encoding += kind;
  encoding += '\0';
  return encoding;
}

void append_column(std::string& encoding, const std::string& name, const SqlValue& value) {
  if (std::holds_alternative<std::monostate>(value) && added_after_encoding(name)) {
    return;  // a row chained before the column existed keeps its hash
  }
  encoding += name;
  encoding += '\0';
  append_value(encoding, value);
}

std::string digest(const std::string& encoding, const ChainKey* key) {
  return key != nullptr ? key->mac(encoding) : sha256_hex(encoding);
}

// The hash of a link over its canonical encoding: a versioned domain tag, the kind, then every
// hashed column as name, NUL, typed value. Reading the row back from SQLite makes writer and
// verifier agree. `names` are the statement's column names from `first_column` on; the row holds
// the table's hashed columns, then its keyed ones. Unkeyed links (v1) are SHA-256 over the hashed
// columns; keyed links (v2) are HMAC-SHA256 under `key` over all of them.
std::string link_hash(std::string_view kind, const Statement& row, int first_column,
                      const std::vector<std::string>& names, int hashed_count,
                      const ChainKey* key) {
  std::string encoding = encoding_start(kind, key != nullptr);
  int end = key != nullptr ? row.column_count() : first_column + hashed_count;
  for (int column = first_column; column < end; ++column) {
    append_column(encoding, names[static_cast<size_t>(column - first_column)], row.column(column));
  }
  return digest(encoding, key);
}

int count_columns(std::string_view list) {
  return list.empty() ? 0 : static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
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

namespace {

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
  std::string hash =
      link_hash(table.kind, *row, 0, names_from(*row, 0), count_columns(table.hashed_columns), key);
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

struct Link {
  std::string label;  // run "abc…"
  int64_t seq = 0;
  std::string prev_hash;
  std::string stored_hash;
  std::string computed_hash;
};

struct Finding {
  ChainFault fault;
  std::string problem;
};

// Walks one table's links in chain order.
class LinkCursor {
 public:
  LinkCursor(Database& db, const ChainTable& table, const ChainState& state, const ChainKey* key)
      : m_table(table),
        m_state(state),
        m_key(key),
        m_select(db,
                 "SELECT chain_seq, prev_hash, row_hash, " + std::string(table.id_column) + ", " +
                     link_columns(table) +
                     table_sql(table, " FROM $T WHERE chain_seq IS NOT NULL ORDER BY chain_seq"),
                 "read the chain"),
        m_names(names_from(m_select, 4)) {
    advance();
  }

  [[nodiscard]] bool valid() const { return m_valid; }
  [[nodiscard]] int64_t seq() const { return m_select.column_int(0); }
  void advance() { m_valid = m_select.step(); }

  [[nodiscard]] Link current() const {
    const ChainKey* key = m_state.keyed_at(seq()) ? m_key : nullptr;
    return Link{
        std::string(m_table.kind) + " " + quoted(m_select.column_text(3)), seq(),
        m_select.column_text(1), m_select.column_text(2),
        link_hash(m_table.kind, m_select, 4, m_names, count_columns(m_table.hashed_columns), key)};
  }

 private:
  const ChainTable& m_table;
  const ChainState& m_state;
  const ChainKey* m_key;
  Statement m_select;
  std::vector<std::string> m_names;
  bool m_valid = false;
};

std::string short_hash(const std::string& hash) {
  return hash.empty() ? "(none)" : hash.substr(0, 16) + "…";
}

std::string expected_found(const std::string& expected, const std::string& found) {
  return " (expected " + short_hash(expected) + ", found " + short_hash(found) + ")";
}

// What is wrong with `link` given the link before it (empty label: the anchor), if anything.
std::optional<Finding> check_link(const Link& link, int64_t expected_seq,
                                  const std::string& expected_prev,
                                  const std::string& previous_label) {
  std::string position = " (chain position " + std::to_string(link.seq) + ")";
  if (link.seq < expected_seq) {
    return Finding{ChainFault::inserted,
                   link.label + position + " comes before position " +
                       std::to_string(expected_seq) +
                       ", which is already taken: it was inserted out of order"};
  }
  if (link.seq > expected_seq) {
    return Finding{ChainFault::deleted, "chain positions " + std::to_string(expected_seq) + " to " +
                                            std::to_string(link.seq - 1) + " are missing before " +
                                            link.label + ": rows were deleted (expected position " +
                                            std::to_string(expected_seq) + ", found " +
                                            std::to_string(link.seq) + ")"};
  }
  if (link.computed_hash != link.stored_hash) {
    return Finding{ChainFault::changed,
                   link.label + position +
                       " was changed after it was recorded: its hash does not match" +
                       expected_found(link.computed_hash, link.stored_hash)};
  }
  if (link.prev_hash != expected_prev) {
    std::string previous = previous_label.empty() ? "the chain's start" : previous_label;
    return Finding{
        ChainFault::relinked,
        link.label + position + " does not follow " + previous + ": " +
            (previous_label.empty() ? "" : previous + " was changed and its hash recomputed, or ") +
            "rows were inserted out of order or reordered" +
            expected_found(expected_prev, link.prev_hash)};
  }
  return std::nullopt;
}

std::optional<Finding> check_integrity(Database& db) {
  Statement check(db, "PRAGMA quick_check", "check the file's integrity");
  if (check.step() && check.column_text(0) != "ok") {
    return Finding{ChainFault::damaged, "the file is damaged: " + check.column_text(0)};
  }
  return std::nullopt;
}

std::optional<Finding> check_head(const ChainState& state, int64_t last_seq,
                                  const std::string& last_hash, const std::string& last_label) {
  if (state.head_seq == last_seq && state.head_hash == last_hash) {
    return std::nullopt;
  }
  std::string after = last_label.empty() ? "the anchor" : last_label;
  return Finding{ChainFault::truncated,
                 "the chain head is position " + std::to_string(state.head_seq) +
                     " but the last row is " + std::to_string(last_seq) + ": rows after " + after +
                     " were deleted or the head was edited" +
                     expected_found(last_hash, state.head_hash)};
}

std::optional<Finding> find_unchained_row(Database& db) {
  for (const ChainTable* table : k_chain_tables) {
    Statement select(db,
                     "SELECT " + std::string(table->id_column) +
                         table_sql(*table, " FROM $T WHERE chain_seq IS NULL AND (") +
                         std::string(table->final_condition) + ") LIMIT 1",
                     "look for rows outside the chain");
    if (select.step()) {
      return Finding{ChainFault::inserted,
                     std::string(table->kind) + " " + quoted(select.column_text(0)) +
                         " is finished but not in the chain: it was inserted or edited outside "
                         "sandshim"};
    }
  }
  return std::nullopt;
}

// Merges the per-table cursors by sequence number and checks each link against the previous.
std::optional<Finding> walk_links(Database& db, const ChainState& state, const ChainKey* key,
                                  int64_t& links_checked) {
  int64_t expected_seq = state.anchor_seq + 1;
  std::string previous_hash = state.anchor_hash;
  std::string previous_label;
  LinkCursor runs(db, k_run_chain, state, key);
  LinkCursor decisions(db, k_decision_chain, state, key);
  while (runs.valid() || decisions.valid()) {
    bool take_run = runs.valid() && (!decisions.valid() || runs.seq() <= decisions.seq());
    LinkCursor& next = take_run ? runs : decisions;
    Link link = next.current();
    if (auto finding = check_link(link, expected_seq, previous_hash, previous_label)) {
      return finding;
    }
    previous_hash = link.stored_hash;
    previous_label = link.label;
    ++expected_seq;
    ++links_checked;
    next.advance();
  }
  return check_head(state, expected_seq - 1, previous_hash, previous_label);
}

std::optional<Finding> check_key(const ChainState& state, const ChainKey* key) {
  if (!state.keyed()) {
    return std::nullopt;
  }
  if (key == nullptr) {
    return Finding{ChainFault::no_key,
                   "the chain is keyed (key " + *state.key_id + ") from position " +
                       std::to_string(state.keyed_from_seq) +
                       " and this reader has no key: run verify as root or the broker's user"};
  }
  if (key->id() != *state.key_id) {
    return Finding{ChainFault::wrong_key, "the chain is keyed with key " + *state.key_id +
                                              ", the configured key is " + key->id()};
  }
  return std::nullopt;
}

std::optional<Finding> check_state_mac(const ChainState& state, const ChainKey* key) {
  if (!state.keyed() || key == nullptr || state_mac_of(state, *key) == state.state_mac) {
    return std::nullopt;
  }
  return Finding{ChainFault::state_edited,
                 "the chain_state row (head position " + std::to_string(state.head_seq) +
                     ", anchor position " + std::to_string(state.anchor_seq) +
                     ") was edited outside sandshim: its HMAC does not match; the head was moved "
                     "back (rows after it deleted) or the anchor forward (rows before it deleted)" +
                     expected_found(state_mac_of(state, *key), state.state_mac)};
}

// The label and hash of the link at `seq`, if it is there.
std::optional<std::pair<std::string, std::string>> link_at(Database& db, int64_t seq) {
  Statement select(db,
                   "SELECT 'run \"' || run_id || '\"', row_hash FROM runs WHERE chain_seq = ?1 "
                   "UNION ALL SELECT 'decision \"' || decision_id || '\"', row_hash FROM decisions "
                   "WHERE chain_seq = ?1",
                   "read an anchored link");
  select.bind(1, seq);
  if (!select.step()) {
    return std::nullopt;
  }
  return std::pair{select.column_text(0), select.column_text(1)};
}

std::string where_in_log(const AnchorEntry& entry) {
  return "line " + std::to_string(entry.line) + ", " + format_iso8601_ms(entry.time_ms);
}

std::optional<Finding> check_foreign_chains(const std::vector<AnchorEntry>& entries,
                                            const ChainState& state) {
  for (const auto& entry : entries) {
    if (entry.chain_id != state.chain_id) {
      return Finding{ChainFault::replaced, "the anchor log records chain " + entry.chain_id +
                                               " (position " + std::to_string(entry.seq) + ", " +
                                               where_in_log(entry) +
                                               "), but this database is chain " + state.chain_id +
                                               ": the database it anchors was deleted or replaced"};
    }
  }
  return std::nullopt;
}

std::optional<Finding> check_pruned_anchor(const std::vector<AnchorEntry>& entries,
                                           const ChainState& state) {
  if (state.anchor_seq == 0) {
    return std::nullopt;
  }
  for (const auto& entry : entries) {
    if (entry.kind == AnchorEntry::Kind::prune && entry.chain_id == state.chain_id &&
        entry.seq == state.anchor_seq && entry.hash == state.anchor_hash) {
      return std::nullopt;
    }
  }
  return Finding{ChainFault::anchor_moved,
                 "the chain starts after position " + std::to_string(state.anchor_seq) +
                     " (anchor " + short_hash(state.anchor_hash) +
                     "), but no `audit prune` recorded that anchor in the anchor log: rows 1 to " +
                     std::to_string(state.anchor_seq) + " were deleted and the anchor moved"};
}

std::optional<Finding> truncation(const AnchorEntry& head, const ChainState& state) {
  return Finding{ChainFault::truncated,
                 "the anchor log recorded chain position " + std::to_string(head.seq) + " (" +
                     short_hash(head.hash) + ", " + where_in_log(head) +
                     ") but the chain ends at position " + std::to_string(state.head_seq) +
                     ": rows " + std::to_string(state.head_seq + 1) + " to " +
                     std::to_string(head.seq) + " were deleted (truncated)"};
}

// Every head the log recorded must still be in the chain with the same hash; the lowest
// mismatch bounds a rewrite, the highest head past the chain's end names a truncation.
std::optional<Finding> check_anchored_heads(Database& db, std::vector<AnchorEntry> heads,
                                            const ChainState& state) {
  std::sort(heads.begin(), heads.end(),
            [](const AnchorEntry& a, const AnchorEntry& b) { return a.seq < b.seq; });
  int64_t last_good = state.anchor_seq;
  for (const auto& head : heads) {
    if (head.seq <= state.anchor_seq || head.seq > state.head_seq) {
      continue;
    }
    auto link = link_at(db, head.seq);
    if (link && link->second != head.hash) {
      return Finding{ChainFault::rechained,
                     link->first + " (chain position " + std::to_string(head.seq) +
                         ") is not the link the anchor log recorded (" + where_in_log(head) +
                         "): a row between positions " + std::to_string(last_good + 1) + " and " +
                         std::to_string(head.seq) +
                         " was rewritten and every later hash recomputed" +
                         expected_found(head.hash, link->second)};
    }
    last_good = head.seq;
  }
  if (!heads.empty() && heads.back().seq > state.head_seq) {
    return truncation(heads.back(), state);
  }
  return std::nullopt;
}

std::optional<Finding> junk_finding(int line, const std::string& what) {
  return Finding{ChainFault::anchor_junk, "anchor log line " + std::to_string(line) +
                                              " was not written by its chain's writer: " + what};
}

// A line of this chain sealed with a checksum where the chain is keyed: anyone could write it.
std::optional<Finding> check_seals(const std::vector<AnchorEntry>& entries,
                                   const ChainState& state) {
  for (const auto& entry : entries) {
    if (!entry.old_format && !entry.keyed_seal && state.keyed_at(entry.seq)) {
      return junk_finding(entry.line,
                          "it is sealed with a checksum, not the chain key, at keyed "
                          "position " +
                              std::to_string(entry.seq));
    }
  }
  return std::nullopt;
}

std::vector<AnchorEntry> entries_of(const AnchorFile& file, const ChainState& state,
                                    AnchorEntry::Kind kind) {
  std::vector<AnchorEntry> entries;
  for (const auto& entry : file.entries) {
    if (entry.chain_id == state.chain_id && entry.kind == kind) {
      entries.push_back(entry);
    }
  }
  return entries;
}

std::optional<Finding> check_owner(const AnchorFile& file, const ChainState& state) {
  if (!file.owner) {
    return check_foreign_chains(file.entries, state);  // format 1: every line is about one chain
  }
  if (file.owner->chain_id == state.chain_id) {
    return std::nullopt;
  }
  return Finding{ChainFault::replaced,
                 "the anchor log belongs to chain " + file.owner->chain_id + " of this database (" +
                     quoted(file.owner->database.string()) + ", line " +
                     std::to_string(file.owner->line) + "), but this database is chain " +
                     state.chain_id + ": the database it anchors was deleted or replaced"};
}

std::optional<Finding> check_anchor_log(Database& db, const ChainState& state,
                                        const AnchorFile& file, int64_t& anchored) {
  std::vector<AnchorEntry> heads = entries_of(file, state, AnchorEntry::Kind::head);
  anchored = static_cast<int64_t>(heads.size());
  if (file.junk) {
    return junk_finding(file.junk->line, file.junk->what);
  }
  if (auto finding = check_owner(file, state)) {
    return finding;
  }
  if (auto finding = check_seals(file.entries, state)) {
    return finding;
  }
  if (auto finding = check_pruned_anchor(file.entries, state)) {
    return finding;
  }
  return check_anchored_heads(db, heads, state);
}

// Whether the log is this database's: format 1, claimed by its chain, or made for its path (a
// log made for another database is a neighbour's, not a sign that this one was replaced).
bool anchor_applies(const AnchorFile& file, const ChainState& state, const Database& db) {
  if (!file.owner || file.owner->chain_id == state.chain_id) {
    return true;
  }
  std::error_code ec;
  return std::filesystem::weakly_canonical(file.owner->database, ec) ==
         std::filesystem::weakly_canonical(db.path(), ec);
}

std::string anchor_format(const AnchorFile& file) {
  if (!file.owner) {
    return "; read in the old format 1 (unsealed lines; it gets a format-2 header at the next "
           "write)";
  }
  std::string sealed = "sealed lines of chain " + file.owner->chain_id;
  if (file.old_format_lines == 0) {
    return "; format 2 (" + sealed + ")";
  }
  return "; format 2 from line " + std::to_string(file.owner->line) + " (" + sealed + "), " +
         std::to_string(file.old_format_lines) +
         " unsealed format-1 lines before it (those of other chains ignored)";
}

std::string assurance_of(const ChainState& state, const VerifyOptions& options,
                         const AnchorFile* anchor, int64_t anchored) {
  std::string text = state.keyed() ? "keyed (HMAC-SHA256, key " + *state.key_id +
                                         ") from position " + std::to_string(state.keyed_from_seq)
                                   : "unkeyed: whoever can write the file can recompute the chain";
  if (anchor == nullptr) {
    return text + "; no anchor log: deleting or rewriting the whole file would not show";
  }
  if (anchor->owner && anchor->owner->chain_id != state.chain_id) {
    return text + "; the anchor log " + quoted(options.anchor_file.string()) +
           " belongs to chain " + anchor->owner->chain_id + " of another database (" +
           quoted(anchor->owner->database.string()) + "): not compared";
  }
  return text + "; " + std::to_string(anchored) + " heads anchored in " +
         options.anchor_file.string() +
         (anchor->append_only ? " (append-only)"
                              : " (not append-only: its writer could rewrite it)") +
         anchor_format(*anchor);
}

VerifyResult failed(ChainFault fault, std::string problem, ChainState state = {}) {
  return VerifyResult{false, fault, std::move(problem), 0, std::move(state), 0, ""};
}

std::optional<Finding> check_rows(Database& db, const ChainState& state, const ChainKey* key,
                                  int64_t& links_checked) {
  if (auto finding = walk_links(db, state, key, links_checked)) {
    return finding;
  }
  return find_unchained_row(db);
}

}  // namespace

std::string to_string(ChainFault fault) {
  constexpr const char* k_names[] = {"none",      "damaged",      "missing_state", "no_key",
                                     "wrong_key", "changed",      "deleted",       "inserted",
                                     "relinked",  "truncated",    "rechained",     "anchor_moved",
                                     "replaced",  "state_edited", "anchor_junk"};
  return k_names[static_cast<size_t>(fault)];
}

VerifyResult verify_chain(Database& db, const VerifyOptions& options) {
  if (auto damage = check_integrity(db)) {
    return failed(damage->fault, damage->problem);
  }
  auto state = read_chain_state(db);
  if (!state) {
    return failed(ChainFault::missing_state,
                  "the chain_state row is missing: it was deleted outside sandshim");
  }
  std::optional<AnchorFile> anchor;
  if (!options.anchor_file.empty()) {
    anchor = read_anchor_file(options.anchor_file, options.key);
  }
  VerifyResult result{true, ChainFault::none, "", 0, *state, 0, ""};
  std::optional<Finding> finding = check_key(*state, options.key);
  if (!finding) {
    finding = check_rows(db, *state, options.key, result.links_checked);
  }
  if (!finding && anchor && anchor_applies(*anchor, *state, db)) {
    finding = check_anchor_log(db, *state, *anchor, result.anchored_heads);
  }
  if (!finding) {
    finding = check_state_mac(*state, options.key);
  }
  if (finding) {
    result.ok = false;
    result.fault = finding->fault;
    result.problem = finding->problem;
  }
  result.assurance =
      assurance_of(*state, options, anchor ? &*anchor : nullptr, result.anchored_heads);
  return result;
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
    append_column(encoding, names[column], values[column]);
  }
  return digest(encoding, key);
}

std::string chain_state_mac(const ChainState& state, const ChainKey& key) {
  return state_mac_of(state, key);
}

}  // namespace sandshim::audit
