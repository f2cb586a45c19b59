// verify_chain: every link recomputed from the anchor to the head, then the anchor log compared.
#include <algorithm>
#include <vector>

#include "audit/chain.hpp"
#include "audit/chain_detail.hpp"
#include "audit/time_spec.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

using namespace chain_detail;

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
    return Link{std::string(m_table.kind) + " " + quoted(m_select.column_text(3)), seq(),
                m_select.column_text(1), m_select.column_text(2),
                link_hash(m_table, m_select, 4, m_names, key)};
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

std::string position_of(const Link& link) {
  return " (chain position " + std::to_string(link.seq) + ")";
}

// A link whose position is not the next one: an earlier position means an inserted row, a later
// one deleted rows.
std::optional<Finding> check_position(const Link& link, int64_t expected_seq) {
  if (link.seq < expected_seq) {
    return Finding{ChainFault::inserted,
                   link.label + position_of(link) + " comes before position " +
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
  return std::nullopt;
}

Finding relinked(const Link& link, const std::string& expected_prev,
                 const std::string& previous_label) {
  std::string previous = previous_label.empty() ? "the chain's start" : previous_label;
  return Finding{
      ChainFault::relinked,
      link.label + position_of(link) + " does not follow " + previous + ": " +
          (previous_label.empty() ? "" : previous + " was changed and its hash recomputed, or ") +
          "rows were inserted out of order or reordered" +
          expected_found(expected_prev, link.prev_hash)};
}

// What is wrong with `link` given the link before it (empty label: the anchor), if anything.
std::optional<Finding> check_link(const Link& link, int64_t expected_seq,
                                  const std::string& expected_prev,
                                  const std::string& previous_label) {
  if (auto finding = check_position(link, expected_seq)) {
    return finding;
  }
  if (link.computed_hash != link.stored_hash) {
    return Finding{ChainFault::changed,
                   link.label + position_of(link) +
                       " was changed after it was recorded: its hash does not match" +
                       expected_found(link.computed_hash, link.stored_hash)};
  }
  if (link.prev_hash != expected_prev) {
    return relinked(link, expected_prev, previous_label);
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

// The checks in order, cheapest and most basic first; the first fault found is the one reported.
// Counts what was checked into `result` as it goes.
std::optional<Finding> first_finding(Database& db, const ChainState& state, const ChainKey* key,
                                     const AnchorFile* anchor, VerifyResult& result) {
  if (auto finding = check_key(state, key)) {
    return finding;
  }
  if (auto finding = check_rows(db, state, key, result.links_checked)) {
    return finding;
  }
  if (anchor != nullptr && anchor_applies(*anchor, state, db)) {
    if (auto finding = check_anchor_log(db, state, *anchor, result.anchored_heads)) {
      return finding;
    }
  }
  return check_state_mac(state, key);
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
  if (auto finding = first_finding(db, *state, options.key, anchor ? &*anchor : nullptr, result)) {
    result.ok = false;
    result.fault = finding->fault;
    result.problem = finding->problem;
  }
  result.assurance =
      assurance_of(*state, options, anchor ? &*anchor : nullptr, result.anchored_heads);
  return result;
}

}  // namespace sandshim::audit
