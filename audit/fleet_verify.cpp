#include "audit/fleet_verify.hpp"

#include <algorithm>
#include <fstream>

#include "audit/fleet_export.hpp"
#include "audit/schema.hpp"
#include "common/error.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

[[noreturn]] void bad_record(const std::string& source, const std::string& what) {
  throw Fatal("export " + source + ": " + what +
                  "; fix: give the JSON lines `sandshim audit export --format fleet` wrote",
              exit_code::k_usage);
}

std::string string_field(const Row& json, const char* name, const std::string& source) {
  auto found = json.find(name);
  if (found == json.end() || !found->is_string()) {
    bad_record(source, std::string("no string field \"") + name + "\"");
  }
  return found->get<std::string>();
}

// A chain position: 0 (before the first link) up to far below overflow.
int64_t integer_field(const Row& json, const char* name, const std::string& source) {
  constexpr int64_t k_max_position = int64_t{1} << 62;
  auto found = json.find(name);
  if (found == json.end() || !found->is_number_integer() ||
      (found->is_number_unsigned() && found->get<uint64_t>() > uint64_t{k_max_position}) ||
      found->get<int64_t>() < 0 || found->get<int64_t>() > k_max_position) {
    bad_record(source, std::string("no chain position in \"") + name + "\"");
  }
  return found->get<int64_t>();
}

const ChainTable& table_of(const std::string& kind, const std::string& source) {
  if (kind == k_run_chain.kind) {
    return k_run_chain;
  }
  if (kind == k_decision_chain.kind) {
    return k_decision_chain;
  }
  bad_record(source, "unknown kind " + quoted(kind));
}

// One link column of a row record; a column added after the export was written (an older
// sandshim's) is null, as in the database it came from, and is left out of the hash.
SqlValue column_value(const ExportRecord& record, const Row& columns, const std::string& name,
                      size_t& given) {
  auto column = columns.find(name);
  if (column == columns.end() && is_added_column(*record.table, name)) {
    return SqlValue();
  }
  auto value = column == columns.end() ? std::nullopt : decode_value(*column);
  if (!value) {
    bad_record(record.source, "column " + quoted(name) + " is missing or not a value");
  }
  ++given;
  return std::move(*value);
}

// A row record's columns: exactly the table's link columns, each a value an exporter writes.
void read_row(ExportRecord& record) {
  record.table = &table_of(string_field(record.json, "kind", record.source), record.source);
  record.seq = integer_field(record.json, "seq", record.source);
  if (record.seq == 0) {
    bad_record(record.source, "chain positions start at 1");
  }
  string_field(record.json, "row_hash", record.source);
  auto columns = record.json.find("columns");
  std::string not_a_link =
      "the row's columns are not those of a " + std::string(record.table->kind) + " link";
  if (columns == record.json.end() || !columns->is_object()) {
    bad_record(record.source, not_a_link);
  }
  std::vector<std::string> names = link_column_names(*record.table);
  size_t given = 0;
  for (const auto& name : names) {
    record.values.push_back(column_value(record, *columns, name, given));
  }
  if (given != columns->size()) {
    bad_record(record.source, not_a_link);
  }
  auto seq_index = std::find(names.begin(), names.end(), "chain_seq") - names.begin();
  if (record.values[static_cast<size_t>(seq_index)] != SqlValue(record.seq)) {
    bad_record(record.source, "its seq is not its chain_seq column");
  }
}

// A head record's fields: its positions and hashes, and a key id when the chain is keyed.
void check_head_record(const ExportRecord& record) {
  for (const char* name : {"keyed_from_seq", "head_seq", "anchor_seq"}) {
    integer_field(record.json, name, record.source);
  }
  for (const char* name : {"head_hash", "anchor_hash", "state_mac"}) {
    string_field(record.json, name, record.source);
  }
  auto key_id = record.json.find("key_id");
  if (key_id != record.json.end() && !key_id->is_string() && !key_id->is_null()) {
    bad_record(record.source, "key_id is neither a string nor null");
  }
}

// A begin record's fields: the position and hash the export's first row follows.
void check_begin_record(const ExportRecord& record) {
  integer_field(record.json, "after_seq", record.source);
  string_field(record.json, "after_hash", record.source);
}

ExportRecord parse_record(const std::string& line, const std::string& source, size_t order) {
  ExportRecord record;
  record.source = source;
  record.order = order;
  record.json = Row::parse(line, nullptr, false);
  if (!record.json.is_object()) {
    bad_record(source, "not a JSON object");
  }
  if (record.json.contains("class_uid")) {
    bad_record(source, "an OCSF event: it carries no chain to verify or load");
  }
  record.record = string_field(record.json, "record", source);
  record.host = string_field(record.json, "host", source);
  record.chain_id = string_field(record.json, "chain_id", source);
  if (record.record == "row") {
    read_row(record);
  } else if (record.record == "head") {
    check_head_record(record);
  } else if (record.record == "begin") {
    check_begin_record(record);
  } else {
    bad_record(source, "unknown record " + quoted(record.record));
  }
  return record;
}

// --key HOST=PATH, once per host; a later pair for the same host wins.
void add_named_keys(HostKeys& keys, const std::vector<std::string>& host_paths) {
  for (const auto& pair : host_paths) {
    size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw Fatal("--key " + quoted(pair) + " with --export: expected HOST=PATH",
                  exit_code::k_usage);
    }
    auto key = read_chain_key(pair.substr(equals + 1));
    if (!key) {
      throw Fatal("cannot read the key " + quoted(pair.substr(equals + 1)), exit_code::k_usage);
    }
    keys.insert_or_assign(pair.substr(0, equals), *key);
  }
}

// --key-dir: DIR/HOST.key for each host not already named by --key; unreadable keys are skipped.
void add_key_dir(HostKeys& keys, const std::filesystem::path& key_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(key_dir, ec)) {
    if (entry.path().extension() == ".key") {
      if (auto key = read_chain_key(entry.path())) {
        keys.emplace(entry.path().stem().string(), *key);
      }
    }
  }
  if (ec) {
    throw Fatal("cannot read the key directory " + quoted(key_dir.string()) + ": " + ec.message(),
                exit_code::k_usage);
  }
}

}  // namespace

std::vector<ExportRecord> read_export_stream(std::istream& in, const std::string& name) {
  std::vector<ExportRecord> records;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (!trim(line).empty()) {
      records.push_back(parse_record(line, name + ":" + std::to_string(number), records.size()));
    }
  }
  return records;
}

std::vector<ExportRecord> read_exports(const std::vector<std::filesystem::path>& files) {
  std::vector<ExportRecord> records;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      throw Fatal("cannot read the export " + quoted(file.string()), exit_code::k_usage);
    }
    for (auto& record : read_export_stream(in, file.string())) {
      record.order = records.size();
      records.push_back(std::move(record));
    }
  }
  return records;
}

HostKeys read_host_keys(const std::vector<std::string>& host_paths,
                        const std::filesystem::path& key_dir) {
  HostKeys keys;
  add_named_keys(keys, host_paths);
  if (!key_dir.empty()) {
    add_key_dir(keys, key_dir);
  }
  return keys;
}

namespace {

size_t column_index(const ChainTable& table, std::string_view name) {
  auto names = link_column_names(table);
  return static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

std::string prev_hash_of(const ExportRecord& row) {
  const auto& value = row.values[column_index(*row.table, "prev_hash")];
  const auto* text = std::get_if<std::string>(&value);
  return text != nullptr ? *text : "";
}

std::string row_hash_of(const ExportRecord& row) {
  return row.json["row_hash"].get<std::string>();
}

ChainState state_of(const Row& head) {
  ChainState state;
  state.head_seq = head["head_seq"].get<int64_t>();
  state.head_hash = head["head_hash"].get<std::string>();
  state.anchor_seq = head["anchor_seq"].get<int64_t>();
  state.anchor_hash = head["anchor_hash"].get<std::string>();
  if (head.contains("anchor_ms") && head["anchor_ms"].is_number_integer()) {
    state.anchor_ms = head["anchor_ms"].get<int64_t>();
  }
  state.chain_id = head["chain_id"].get<std::string>();
  if (head.contains("key_id") && head["key_id"].is_string()) {
    state.key_id = head["key_id"].get<std::string>();
  }
  state.keyed_from_seq = head["keyed_from_seq"].get<int64_t>();
  state.state_mac = head["state_mac"].get<std::string>();
  return state;
}

// One host's records and what the walk over them found.
class HostCheck {
 public:
  // `fleet_keyed`: keys were given for some host, so every host is expected to have one.
  HostCheck(HostReport& report, const ChainKey* key, bool fleet_keyed)
      : m_report(report), m_key(key), m_fleet_keyed(fleet_keyed) {}

  void add(const ExportRecord& record) {
    if (m_report.chain_id.empty()) {
      m_report.chain_id = record.chain_id;
    }
    if (record.chain_id != m_report.chain_id) {
      if (!m_chain_changed) {
        fault("chain_changed", record.seq, record.source,
              "the host's records name chain " + record.chain_id + " after chain " +
                  m_report.chain_id + ": its database was replaced; only chain " +
                  m_report.chain_id + " is verified");
      }
      m_chain_changed = true;
      return;
    }
    if (record.record == "row") {
      add_row(record);
    } else if (record.record == "head") {
      m_heads.push_back(&record);
    } else {
      m_begins.push_back(&record);
    }
  }

  void finish() {
    check_key();
    walk_rows();
    check_heads();
  }

 private:
  void fault(std::string kind, int64_t seq, const std::string& source, std::string problem) {
    m_report.faults.push_back(ExportFault{std::move(kind), seq, source, std::move(problem)});
  }

  // In the input's order a host's positions only grow; an identical copy (overlapping exports)
  // is dropped, a different row at a taken position is a fault.
  void add_row(const ExportRecord& row) {
    auto [at, inserted] = m_rows.emplace(row.seq, &row);
    if (!inserted) {
      if (at->second->json != row.json) {
        fault("duplicate", row.seq, row.source,
              "position " + std::to_string(row.seq) + " holds another row at " +
                  at->second->source + ": one of them was edited");
      }
      return;
    }
    if (m_last != nullptr && row.seq < m_last->seq) {
      fault("reordered", row.seq, row.source,
            "position " + std::to_string(row.seq) + " comes after position " +
                std::to_string(m_last->seq) + " (" + m_last->source + "): the rows were reordered");
    }
    if (m_last == nullptr || row.seq > m_last->seq) {
      m_last = &row;
    }
  }

  void check_key() {
    find_key_id();
    m_report.keyed = !m_key_id.empty();
    if (m_report.keyed) {
      check_key_matches();
    } else {
      check_unkeyed();
    }
  }

  // The key the chain was last keyed with, and from which position, as its heads record it.
  void find_key_id() {
    for (const auto* head : m_heads) {
      auto key_id = head->json.find("key_id");
      if (key_id != head->json.end() && key_id->is_string()) {
        m_keyed_from = head->json["keyed_from_seq"].get<int64_t>();
        m_key_id = key_id->get<std::string>();
      }
    }
  }

  // An unkeyed export where a key is expected is a downgrade or a stranger, not a clean chain.
  void check_unkeyed() {
    if (m_key != nullptr) {  // re-hashed without the key, or its heads removed: a downgrade
      fault("unkeyed", 0, "",
            "a key was given for this host, but no head of its export is keyed: the heads "
            "were removed or the chain re-hashed without the key");
    } else if (m_fleet_keyed) {
      fault("unknown_host", 0, "",
            "the collector holds keys for other hosts but none for this one, and its export "
            "is unkeyed: records of a host the fleet does not know");
    }
  }

  // A keyed chain needs the key it names; a wrong key is dropped so no link is checked with it.
  void check_key_matches() {
    if (m_key == nullptr) {
      fault("no_key", m_keyed_from, "",
            "the chain is keyed (key " + m_key_id +
                ") and no key was given for this host: its links "
                "were not checked; give --key HOST=PATH");
    } else if (m_key->id() != m_key_id) {
      fault("wrong_key", m_keyed_from, "",
            "the chain is keyed with key " + m_key_id + ", the key given is " + m_key->id());
      m_key = nullptr;
    }
  }

  // The position and hash the host's first row follows, from its begin records.
  std::pair<int64_t, std::string> start() const {
    const ExportRecord* first = nullptr;
    for (const auto* begin : m_begins) {
      if (first == nullptr ||
          begin->json["after_seq"].get<int64_t>() < first->json["after_seq"].get<int64_t>()) {
        first = begin;
      }
    }
    if (first != nullptr) {
      return {first->json["after_seq"].get<int64_t>(),
              first->json["after_hash"].get<std::string>()};
    }
    if (m_rows.empty()) {
      return {0, ""};
    }
    const ExportRecord& row = *m_rows.begin()->second;
    return {row.seq - 1, prev_hash_of(row)};
  }

  // The link's own hash, when this verifier can compute it (keyed positions need the key).
  void check_hash(const ExportRecord& row) {
    bool keyed = m_report.keyed && row.seq >= m_keyed_from;
    if (keyed && m_key == nullptr) {
      return;
    }
    std::string computed = link_hash_of(*row.table, row.values, keyed ? m_key : nullptr);
    if (computed != row_hash_of(row)) {
      fault("changed", row.seq, row.source,
            std::string(row.table->kind) + " at position " + std::to_string(row.seq) +
                " was changed after it was recorded: its " + (keyed ? "HMAC" : "hash") +
                " does not match (expected " + computed.substr(0, 16) + "…, found " +
                row_hash_of(row).substr(0, 16) + "…)");
    }
  }

  void walk_rows() {
    auto [expected, previous] = start();
    ++expected;
    for (const auto& [seq, row] : m_rows) {
      if (seq > expected) {
        fault("gap", expected, row->source,
              "positions " + std::to_string(expected) + " to " + std::to_string(seq - 1) +
                  " are missing before position " + std::to_string(seq) + ": rows were dropped");
        previous.clear();
      } else if (seq < expected) {
        fault("gap", seq, row->source,
              "position " + std::to_string(seq) + " is before the export's start (" +
                  std::to_string(expected - 1) + ")");
      }
      check_hash(*row);
      if (!previous.empty() && prev_hash_of(*row) != previous) {
        fault("relinked", seq, row->source,
              "position " + std::to_string(seq) +
                  " does not follow the row before it: its prev_hash is not that row's hash");
      }
      previous = row_hash_of(*row);
      expected = seq + 1;
      ++m_report.rows;
    }
    if (!m_rows.empty()) {
      m_report.first_seq = m_rows.begin()->first;
      m_report.last_seq = m_rows.rbegin()->first;
    }
  }

  void check_head(const ExportRecord& head) {
    ChainState state = state_of(head.json);
    if (state.keyed() && m_key != nullptr && chain_state_mac(state, *m_key) != state.state_mac) {
      fault("head_edited", state.head_seq, head.source,
            "the head record's HMAC does not match: its position, hash or anchor was edited");
    }
    auto row = m_rows.find(state.head_seq);
    if (row != m_rows.end() && row_hash_of(*row->second) != state.head_hash) {
      fault("rechained", state.head_seq, head.source,
            "the head records another hash at position " + std::to_string(state.head_seq) +
                " than the row there (" + row->second->source + ")");
    }
    m_report.head_seq = std::max(m_report.head_seq, state.head_seq);
  }

  void check_heads() {
    const ExportRecord* highest = nullptr;
    for (const auto* head : m_heads) {
      check_head(*head);
      if (highest == nullptr ||
          head->json["head_seq"].get<int64_t>() > highest->json["head_seq"].get<int64_t>()) {
        highest = head;
      }
    }
    int64_t last = m_rows.empty() ? start().first : m_rows.rbegin()->first;
    if (highest != nullptr && m_report.head_seq > last) {
      fault("truncated", last + 1, highest->source,
            "the head (" + highest->source + ") records position " +
                std::to_string(m_report.head_seq) + " but the export ends at " +
                std::to_string(last) + ": rows " + std::to_string(last + 1) + " to " +
                std::to_string(m_report.head_seq) + " were cut off");
    }
  }

  HostReport& m_report;
  const ChainKey* m_key;
  bool m_fleet_keyed;
  std::map<int64_t, const ExportRecord*> m_rows;
  std::vector<const ExportRecord*> m_heads;
  std::vector<const ExportRecord*> m_begins;
  const ExportRecord* m_last = nullptr;
  int64_t m_keyed_from = 0;
  std::string m_key_id;
  bool m_chain_changed = false;
};

// The row itself, into the table of its kind, with the hash it was exported with.
void insert_link(Database& db, const ExportRecord& record) {
  auto names = link_column_names(*record.table);
  std::string placeholders = "?";
  for (size_t i = 0; i < names.size(); ++i) {
    placeholders += ", ?";
  }
  std::string sql = "INSERT OR IGNORE INTO " + std::string(record.table->table) + " (" +
                    join(names, ", ") + ", row_hash) VALUES (" + placeholders + ")";
  auto insert = db.cached(sql, "load the export");
  int index = 1;
  for (const auto& value : record.values) {
    insert->bind(index++, value);
  }
  insert->bind(index, record.json["row_hash"].get<std::string>()).run();
}

// Which host and chain the row came from: the schema's tables have no column for it.
void insert_origin(Database& db, const ExportRecord& record) {
  auto where =
      db.cached("INSERT OR IGNORE INTO exported VALUES (?, ?, ?, ?, ?)", "load the export");
  where->bind(1, record.host)
      .bind(2, record.chain_id)
      .bind(3, std::string(record.table->kind))
      .bind(4, record.seq)
      .bind(5, record.values.front())
      .run();
}

}  // namespace

ExportVerifyResult verify_exports(const std::vector<ExportRecord>& records, const HostKeys& keys) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ExportRecord*>> by_host;
  for (const auto& record : records) {
    auto& list = by_host[record.host];
    if (list.empty()) {
      order.push_back(record.host);
    }
    list.push_back(&record);
  }
  ExportVerifyResult result;
  result.hosts.reserve(order.size());
  for (const auto& host : order) {
    HostReport& report = result.hosts.emplace_back(HostReport{host, "", 0, 0, 0, 0, false, {}});
    auto key = keys.find(host);
    HostCheck check(report, key == keys.end() ? nullptr : &key->second, !keys.empty());
    for (const auto* record : by_host[host]) {
      check.add(*record);
    }
    check.finish();
    result.ok = result.ok && report.faults.empty();
  }
  return result;
}

std::unique_ptr<Database> load_exports(const std::vector<ExportRecord>& records) {
  auto db =
      std::make_unique<Database>(":memory:", OpenMode::read_write, std::chrono::milliseconds(0));
  migrate(*db);
  db->execute(
      "DROP INDEX runs_chain; DROP INDEX decisions_chain; CREATE TABLE exported (host TEXT NOT "
      "NULL, chain_id TEXT NOT NULL, kind TEXT NOT NULL, chain_seq INTEGER NOT NULL, id TEXT NOT "
      "NULL);",
      "load the export");
  Transaction transaction(*db, Transaction::Mode::immediate);
  for (const auto& record : records) {
    if (record.record == "row") {
      insert_link(*db, record);
      insert_origin(*db, record);
    }
  }
  transaction.commit();
  return db;
}

}  // namespace sandshim::audit
