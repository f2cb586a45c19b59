#include "audit/chain.hpp"

#include <bit>
#include <memory>
#include <vector>

#include "audit/encoding.hpp"
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
    "pid_start_ticks, chain_seq, prev_hash",
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

// Columns added after the encoding was fixed (schema 3): hashed only when not null.
bool added_after_encoding(std::string_view name) {
  return name == "answer" || name == "permission_mode" || name == "outcome";
}

// The hash of a link over its canonical encoding: a versioned domain tag, the kind, then every
// hashed column as name, NUL, typed value. Reading the row back from SQLite makes writer and
// verifier agree. `names` are the statement's column names from `first_column` on.
std::string link_hash(std::string_view kind, const Statement& row, int first_column,
                      const std::vector<std::string>& names) {
  std::string encoding("sandshim-audit-chain-v1\0", 24);
  encoding += kind;
  encoding += '\0';
  for (int column = first_column; column < row.column_count(); ++column) {
    const std::string& name = names[static_cast<size_t>(column - first_column)];
    if (row.column_is_null(column) && added_after_encoding(name)) {
      continue;  // a row chained before the column existed keeps its hash
    }
    encoding += name;
    encoding += '\0';
    append_value(encoding, row.column(column));
  }
  return sha256_hex(encoding);
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
      "SELECT head_seq, head_hash, anchor_seq, anchor_hash, anchor_ms FROM chain_state WHERE id = "
      "1",
      "read the chain head");
  if (!select->step()) {
    return std::nullopt;
  }
  ChainState state{select->column_int(0), select->column_text(1), select->column_int(2),
                   select->column_text(3), std::nullopt};
  if (!select->column_is_null(4)) {
    state.anchor_ms = select->column_int(4);
  }
  return state;
}

namespace {

// The hash of one row as it is stored now.
std::string hash_row(Database& db, const ChainTable& table, int64_t rowid) {
  auto row = db.cached(
      "SELECT " + std::string(table.hashed_columns) + table_sql(table, " FROM $T WHERE id = ?"),
      "read the row to chain");
  row->bind(1, rowid);
  if (!row->step()) {
    broken_chain(db, "chain the row: it vanished");
  }
  return link_hash(table.kind, *row, 0, names_from(*row, 0));
}

}  // namespace

void seal_row(Database& db, const ChainTable& table, int64_t rowid) {
  auto state = read_chain_state(db);
  if (!state) {
    broken_chain(db, "chain the row: the chain_state row is missing");
  }
  int64_t seq = state->head_seq + 1;
  auto link = db.cached(table_sql(table, "UPDATE $T SET chain_seq = ?, prev_hash = ? WHERE id = ?"),
                        "link the finished row");
  link->bind(1, seq).bind(2, state->head_hash).bind(3, rowid).run();
  std::string hash = hash_row(db, table, rowid);
  auto seal =
      db.cached(table_sql(table, "UPDATE $T SET row_hash = ? WHERE id = ?"), "seal the row");
  seal->bind(1, hash).bind(2, rowid).run();
  auto head = db.cached("UPDATE chain_state SET head_seq = ?, head_hash = ? WHERE id = 1",
                        "advance the chain head");
  head->bind(1, seq).bind(2, hash).run();
}

namespace {

struct Link {
  std::string label;  // run "abc…"
  int64_t seq = 0;
  std::string prev_hash;
  std::string stored_hash;
  std::string computed_hash;
};

// Walks one table's links in chain order.
class LinkCursor {
 public:
  LinkCursor(Database& db, const ChainTable& table)
      : m_table(table),
        m_select(db,
                 "SELECT chain_seq, prev_hash, row_hash, " + std::string(table.id_column) + ", " +
                     std::string(table.hashed_columns) +
                     table_sql(table, " FROM $T WHERE chain_seq IS NOT NULL ORDER BY chain_seq"),
                 "read the chain"),
        m_names(names_from(m_select, 4)) {
    advance();
  }

  [[nodiscard]] bool valid() const { return m_valid; }
  [[nodiscard]] int64_t seq() const { return m_select.column_int(0); }
  void advance() { m_valid = m_select.step(); }

  [[nodiscard]] Link current() const {
    return Link{std::string(m_table.kind) + " " + quoted(m_select.column_text(3)), seq(),
                m_select.column_text(1), m_select.column_text(2),
                link_hash(m_table.kind, m_select, 4, m_names)};
  }

 private:
  const ChainTable& m_table;
  Statement m_select;
  std::vector<std::string> m_names;
  bool m_valid = false;
};

// What is wrong with `link` given the link before it (empty label: the anchor), if anything.
std::optional<std::string> check_link(const Link& link, int64_t expected_seq,
                                      const std::string& expected_prev,
                                      const std::string& previous_label) {
  std::string position = " (chain position " + std::to_string(link.seq) + ")";
  if (link.seq < expected_seq) {
    return link.label + position + " comes before position " + std::to_string(expected_seq) +
           ", which is already taken: it was inserted out of order";
  }
  if (link.seq > expected_seq) {
    return "chain positions " + std::to_string(expected_seq) + " to " +
           std::to_string(link.seq - 1) + " are missing before " + link.label +
           ": rows were deleted";
  }
  if (link.computed_hash != link.stored_hash) {
    return link.label + position + " was changed after it was recorded: its hash does not match";
  }
  if (link.prev_hash != expected_prev) {
    std::string previous = previous_label.empty() ? "the chain's start" : previous_label;
    return link.label + position + " does not follow " + previous + ": " +
           (previous_label.empty() ? "" : previous + " was changed and its hash recomputed, or ") +
           "rows were inserted out of order or reordered";
  }
  return std::nullopt;
}

std::optional<std::string> check_integrity(Database& db) {
  Statement check(db, "PRAGMA quick_check", "check the file's integrity");
  if (check.step() && check.column_text(0) != "ok") {
    return "the file is damaged: " + check.column_text(0);
  }
  return std::nullopt;
}

std::optional<std::string> check_head(const ChainState& state, int64_t last_seq,
                                      const std::string& last_hash, const std::string& last_label) {
  if (state.head_seq == last_seq && state.head_hash == last_hash) {
    return std::nullopt;
  }
  std::string after = last_label.empty() ? "the anchor" : last_label;
  return "the chain head is position " + std::to_string(state.head_seq) + " but the last row is " +
         std::to_string(last_seq) + ": rows after " + after +
         " were deleted or the head was edited";
}

std::optional<std::string> find_unchained_row(Database& db) {
  for (const ChainTable* table : k_chain_tables) {
    Statement select(db,
                     "SELECT " + std::string(table->id_column) +
                         table_sql(*table, " FROM $T WHERE chain_seq IS NULL AND (") +
                         std::string(table->final_condition) + ") LIMIT 1",
                     "look for rows outside the chain");
    if (select.step()) {
      return std::string(table->kind) + " " + quoted(select.column_text(0)) +
             " is finished but not in the chain: it was inserted or edited outside sandshim";
    }
  }
  return std::nullopt;
}

// Merges the per-table cursors by sequence number and checks each link against the previous.
VerifyResult walk_links(Database& db, const ChainState& state) {
  VerifyResult result{true, "", 0, state};
  int64_t expected_seq = state.anchor_seq + 1;
  std::string previous_hash = state.anchor_hash;
  std::string previous_label;
  LinkCursor runs(db, k_run_chain);
  LinkCursor decisions(db, k_decision_chain);
  while (runs.valid() || decisions.valid()) {
    bool take_run = runs.valid() && (!decisions.valid() || runs.seq() <= decisions.seq());
    LinkCursor& next = take_run ? runs : decisions;
    Link link = next.current();
    if (auto problem = check_link(link, expected_seq, previous_hash, previous_label)) {
      return VerifyResult{false, *problem, result.links_checked, state};
    }
    previous_hash = link.stored_hash;
    previous_label = link.label;
    ++expected_seq;
    ++result.links_checked;
    next.advance();
  }
  if (auto problem = check_head(state, expected_seq - 1, previous_hash, previous_label)) {
    return VerifyResult{false, *problem, result.links_checked, state};
  }
  return result;
}

VerifyResult failed(std::string problem) {
  return VerifyResult{false, std::move(problem), 0, {}};
}

}  // namespace

VerifyResult verify_chain(Database& db) {
  if (auto damage = check_integrity(db)) {
    return failed(*damage);
  }
  auto state = read_chain_state(db);
  if (!state) {
    return failed("the chain_state row is missing: it was deleted outside sandshim");
  }
  VerifyResult result = walk_links(db, *state);
  if (result.ok) {
    if (auto problem = find_unchained_row(db)) {
      result.ok = false;
      result.problem = *problem;
    }
  }
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

PruneResult prune_chain(Database& db, int64_t cutoff_ms, int64_t now_ms, bool dry_run) {
  Transaction transaction(db, Transaction::Mode::immediate);
  VerifyResult verified = verify_chain(db);
  if (!verified.ok) {
    throw Fatal("audit database " + quoted(db.path().string()) +
                ": cannot prune: the chain does not verify (" + verified.problem +
                "); fix: investigate with `sandshim audit verify` first, pruning would hide it");
  }
  const ChainState& state = verified.state;
  int64_t last = last_prunable_seq(db, cutoff_ms, state.head_seq);
  PruneResult result{0, 0, state.anchor_seq};
  if (last <= state.anchor_seq) {
    return result;
  }
  std::string anchor_hash = hash_at(db, last);
  result = PruneResult{delete_links_up_to(db, k_run_chain, last),
                       delete_links_up_to(db, k_decision_chain, last), last};
  Statement anchor(db, "UPDATE chain_state SET anchor_seq = ?, anchor_hash = ?, anchor_ms = ?",
                   "record the chain anchor");
  anchor.bind(1, last).bind(2, anchor_hash).bind(3, now_ms).run();
  if (!dry_run) {
    transaction.commit();
  }
  return result;
}

}  // namespace sandshim::audit
