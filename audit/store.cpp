#include "audit/store.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <thread>

#include "audit/chain.hpp"
#include "audit/encoding.hpp"
#include "audit/log.hpp"
#include "audit/run_fields.hpp"
#include "audit/schema.hpp"
#include "audit/sqlite.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

// The shim process of a record as /proc saw it: a run's two steps come from one process, so
// the second reuses what the first read (one /proc read fewer per run). Outside the anonymous
// namespace: Store::Impl holds one, and in a unity build (SANDSHIM_UNITY_BUILD) a member of an
// anonymous type is GCC's -Wsubobject-linkage.
struct ProcessIdentity {
  pid_t pid = 0;
  int64_t start_ticks = 0;
};

namespace {

// One column a record writes: its name and how the record fills it.
template <typename Record>
struct Column {
  std::string_view name;
  SqlValue (*value)(const Record&) = nullptr;
};

using column_values::nonzero_or_null;
using column_values::optional_int;

using RunColumn = Column<RunRecord>;

constexpr size_t count_written(Written written) {
  return static_cast<size_t>(
      std::count_if(std::begin(k_run_fields), std::end(k_run_fields),
                    [&](const RunField& f) { return f.written == written; }));
}

// How many leading columns complete_run leaves as begin_run wrote them: each is in an index
// (run_id's, runs_start, runs_tool_use, runs_uid) that a rewrite would dirty for nothing.
constexpr size_t k_fixed_run_columns = count_written(Written::at_begin);

// Every runs column a record fills, from the field table: the fixed ones first.
constexpr auto k_run_columns = [] {
  std::array<RunColumn, k_fixed_run_columns + count_written(Written::by_record)> columns{};
  size_t at = 0;
  for (Written written : {Written::at_begin, Written::by_record}) {
    for (const auto& field : k_run_fields) {
      if (field.written == written) {
        columns[at++] = RunColumn{field.column, field.value};
      }
    }
  }
  return columns;
}();

using DecisionColumn = Column<DecisionRecord>;

const DecisionColumn k_decision_columns[] = {
    {"decision_id", [](const DecisionRecord& d) -> SqlValue { return d.decision_id; }},
    {"time_ms", [](const DecisionRecord& d) -> SqlValue { return d.time_ms; }},
    {"agent", [](const DecisionRecord& d) -> SqlValue { return d.agent; }},
    {"event", [](const DecisionRecord& d) -> SqlValue { return d.event; }},
    {"session_id", [](const DecisionRecord& d) -> SqlValue { return d.session_id; }},
    {"tool_use_id", [](const DecisionRecord& d) -> SqlValue { return d.tool_use_id; }},
    {"cwd", [](const DecisionRecord& d) -> SqlValue { return d.cwd; }},
    {"original_command", [](const DecisionRecord& d) -> SqlValue { return d.original_command; }},
    {"rewritten_command", [](const DecisionRecord& d) -> SqlValue { return d.rewritten_command; }},
    {"decision", [](const DecisionRecord& d) -> SqlValue { return to_string(d.decision); }},
    {"answer", [](const DecisionRecord& d) -> SqlValue { return d.answer; }},
    {"permission_mode", [](const DecisionRecord& d) -> SqlValue { return d.permission_mode; }},
    {"reason", [](const DecisionRecord& d) -> SqlValue { return d.reason; }},
    {"rule", [](const DecisionRecord& d) -> SqlValue { return d.rule; }},
    {"payload_bytes", [](const DecisionRecord& d) -> SqlValue { return d.payload_bytes; }},
    {"exit_code",
     [](const DecisionRecord& d) {
       return d.completion ? optional_int(d.completion->exit_code) : SqlValue();
     }},
    {"completed_ms",
     [](const DecisionRecord& d) {
       return d.completion ? nonzero_or_null(d.completion->completed_ms) : SqlValue();
     }},
    {"tool_response_tail",
     [](const DecisionRecord& d) {
       return d.completion ? SqlValue(Blob{d.completion->tool_response_tail}) : SqlValue();
     }},
    {"outcome",
     [](const DecisionRecord& d) {
       return d.completion ? SqlValue(d.completion->outcome) : SqlValue();
     }},
    {"uid",
     [](const DecisionRecord& d) -> SqlValue {
       return static_cast<int64_t>(d.uid.value_or(::getuid()));
     }},
};

template <typename Record>
std::string insert_sql(std::string_view table, std::span<const Column<Record>> columns) {
  std::string names;
  std::string placeholders;
  for (const auto& column : columns) {
    names += (names.empty() ? "" : ", ") + std::string(column.name);
    placeholders += placeholders.empty() ? "?" : ", ?";
  }
  return "INSERT INTO " + std::string(table) + " (" + names + ") VALUES (" + placeholders +
         ") RETURNING id";
}

template <typename Record>
int bind_columns(Statement& statement, std::span<const Column<Record>> columns,
                 const Record& record) {
  int index = 0;
  for (const auto& column : columns) {
    statement.bind(++index, column.value(record));
  }
  return index;
}

std::string complete_run_sql() {
  std::string assignments;
  for (const auto& column : std::span(k_run_columns).subspan(k_fixed_run_columns)) {
    assignments += (assignments.empty() ? "" : ", ") + std::string(column.name) + " = ?";
  }
  return "UPDATE runs SET " + assignments +
         ", chain_seq = ?, prev_hash = ? WHERE run_id = ? AND status = 'running' RETURNING id";
}

// The rowid an `... RETURNING id` statement gave, after running it to the end so the
// transaction can commit; nullopt when no row was inserted or changed.
std::optional<int64_t> returned_id(Statement& statement) {
  if (!statement.step()) {
    return std::nullopt;
  }
  int64_t id = statement.column_int(0);
  statement.run();
  return id;
}

// Inserts one record and returns its rowid.
template <typename Record>
int64_t insert_row(Database& db, std::string_view table, std::span<const Column<Record>> columns,
                   const Record& record) {
  auto insert = db.cached(insert_sql(table, columns), "insert a row");
  bind_columns(*insert, columns, record);
  return returned_id(*insert).value_or(0);
}

// The record with the shim process identified as /proc sees it (or saw it, for `known.pid`).
RunRecord with_process_identity(const RunRecord& record, ProcessIdentity& known) {
  static const std::string boot_id = current_boot_id();
  if (known.pid != record.pid || known.pid == 0) {
    known = ProcessIdentity{record.pid, process_start_ticks(record.pid).value_or(0)};
  }
  RunRecord identified = record;
  identified.boot_id = boot_id;
  identified.pid_start_ticks = known.start_ticks;
  return identified;
}

// A record for step two: finished now when the caller gave no end time.
RunRecord finished_copy(const RunRecord& record, ProcessIdentity& known) {
  if (record.status == RunStatus::running) {
    throw Fatal("internal error: run " + quoted(record.run_id) + " completed with status running");
  }
  RunRecord finished = with_process_identity(record, known);
  if (finished.end_ms == 0) {
    finished.end_ms = wall_clock_ms();
  }
  return finished;
}

[[noreturn]] void fail_filesystem(const std::filesystem::path& db_path, const std::string& what,
                                  const std::filesystem::path& subject, const std::string& fix) {
  throw Fatal("audit database " + quoted(db_path.string()) + ": cannot " + what + " " +
              quoted(subject.string()) + ": " + std::strerror(errno) + "; fix: " + fix);
}

// mkdir -p with mode 700 for each directory it creates; existing ones are left as they are.
void create_parent_directories(const std::filesystem::path& db_path) {
  std::vector<std::filesystem::path> missing;
  for (auto dir = db_path.parent_path(); !dir.empty() && !std::filesystem::exists(dir);
       dir = dir.parent_path()) {
    missing.push_back(dir);
  }
  std::reverse(missing.begin(), missing.end());  // outermost first
  for (const auto& dir : missing) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      fail_filesystem(db_path, "create directory", dir,
                      "create it (mkdir -p -m 700 " + dir.string() +
                          ") or set SANDSHIM_AUDIT_DB to another file");
    }
  }
}

// The file is created by us with mode 600 before SQLite opens it; an existing file is untouched.
void create_private_file(const std::filesystem::path& db_path) {
  int fd = ::open(db_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    ::close(fd);
  } else if (errno != EEXIST) {
    fail_filesystem(db_path, "create", db_path,
                    "make " + db_path.parent_path().string() + " writable by uid " +
                        std::to_string(::geteuid()) + ", or set SANDSHIM_AUDIT_DB to another file");
  }
}

// Queries and maintenance must not leave an empty database where none was.
void require_existing(const std::filesystem::path& db_path) {
  if (!std::filesystem::exists(db_path)) {
    throw Fatal("audit database " + quoted(db_path.string()) +
                ": cannot read it: it does not exist (nothing was recorded there yet); fix: check "
                "--db and SANDSHIM_AUDIT_DB, or run a command through sandshim first");
  }
}

// One attempt to put the file in WAL mode; false when another connection kept it from changing.
bool try_enable_wal(Database& db) {
  try {
    Statement pragma(db, "PRAGMA journal_mode = WAL", "switch it to WAL mode");
    return pragma.step() && pragma.column_text(0) == "wal";
  } catch (const SqliteError& error) {
    if (error.primary_code() != SQLITE_BUSY) {
      throw;
    }
    return false;
  }
}

// Leaving rollback mode needs the file to itself, and SQLite reports a busy file at once instead
// of waiting: so wait here, up to the busy timeout. Only a new file is ever in rollback mode.
void enable_wal(Database& db) {
  auto deadline = std::chrono::steady_clock::now() + db.busy_timeout();
  while (!try_enable_wal(db)) {
    if (std::chrono::steady_clock::now() > deadline) {
      db.fail(SQLITE_BUSY, "switch it to WAL mode");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void tune_for_writing(Database& db) {
  enable_wal(db);
  db.execute("PRAGMA synchronous = NORMAL", "set its synchronous mode");
  db.skip_checkpoint_on_close();
  // Each new shim re-reads the WAL when it opens it; checkpointing at 500 pages instead of 1000
  // halves that read, and the checkpoints' fsyncs stay rare (bench/audit.sh measured both).
  db.execute("PRAGMA wal_autocheckpoint = 500", "set its checkpoint interval");
}

// A keyed chain is extended only with its key: a writer without it would break the chain.
void use_key(Database& db, const StoreOptions& options) {
  auto keyed = [&] {
    auto state = read_chain_state(db);
    return state && state->keyed();
  };
  if (options.key && (options.adopt_key || keyed())) {
    adopt_key(db, *options.key);
  } else if (!options.key && keyed()) {
    throw Fatal("audit database " + quoted(options.path.string()) +
                ": cannot write it: its chain is keyed (the broker's), and only the key's owner "
                "may extend it; fix: run through the broker, or set SANDSHIM_AUDIT_DB to your own "
                "file");
  }
}

std::unique_ptr<Database> open_for_writing(const StoreOptions& options) {
  if (!options.create) {
    require_existing(options.path);
  }
  create_parent_directories(options.path);
  create_private_file(options.path);
  auto db = std::make_unique<Database>(options.path, OpenMode::read_write, options.busy_timeout);
  if (db->is_read_only()) {
    db->fail(SQLITE_READONLY, "open it for writing: the file is read-only");
  }
  tune_for_writing(*db);
  migrate(*db);
  use_key(*db, options);
  return db;
}

// Older files are upgraded once through a writable connection, then read.
std::unique_ptr<Database> open_for_reading(const StoreOptions& options) {
  require_existing(options.path);
  auto db = std::make_unique<Database>(options.path, OpenMode::read_only, options.busy_timeout);
  int64_t version = schema_version(*db);
  refuse_newer_schema(*db, version);
  if (version == k_schema_version) {
    return db;
  }
  db.reset();
  try {
    open_for_writing(options);
  } catch (const Fatal& error) {
    throw Fatal(std::string(error.what()) + " (schema version " + std::to_string(version) +
                " needs an upgrade before it can be read; run sandshim once as the file's owner)");
  }
  return std::make_unique<Database>(options.path, OpenMode::read_only, options.busy_timeout);
}

}  // namespace

namespace {

// The anchor log, claimed for this database's chain (refused when another chain holds it).
AnchorLog open_anchor(Database& db, const StoreOptions& options) {
  auto state = read_chain_state(db);
  if (!state) {
    throw Fatal("audit database " + quoted(db.path().string()) +
                ": cannot anchor it: the chain_state row is missing; fix: run `sandshim audit "
                "verify` to see what was edited");
  }
  AnchorOwner owner{state->chain_id, std::filesystem::absolute(options.path), 0};
  const ChainKey* key = state->keyed() && options.key ? &*options.key : nullptr;
  return AnchorLog::open_for_append(options.anchor_file, owner, key);
}

}  // namespace

struct Store::Impl {
  std::unique_ptr<Database> connection;
  std::optional<ChainKey> key;
  std::optional<AnchorLog> anchor;
  std::filesystem::path anchor_file;
  Database& db = *connection;
  std::string host = current_host();
  ProcessIdentity identity{};  // of the last record's pid, as begin_run read it

  const ChainKey* key_or_null() const { return key ? &*key : nullptr; }
  AnchorEntry seal(const ChainTable& table, int64_t rowid) {
    return seal_row(db, table, rowid, key_or_null());
  }
  // After the commit: a head in the log is always one the database holds.
  void anchor_head(const std::optional<AnchorEntry>& head) {
    if (anchor && head) {
      anchor->append(*head);
    }
  }

  struct DeadRun {
    int64_t rowid;
    pid_t pid;
  };

  int64_t update_running_run(const RunRecord& record, const ChainLink& link);
  [[noreturn]] void explain_not_running(const std::string& run_id);
  std::vector<DeadRun> find_dead_runs(const ShimLiveness& is_alive);
  std::optional<AnchorEntry> mark_abandoned(const DeadRun& run);
};

// The outcome and the chain link in one write of the row.
int64_t Store::Impl::update_running_run(const RunRecord& record, const ChainLink& link) {
  static const std::string sql = complete_run_sql();
  auto update = db.cached(sql, "complete a run");
  auto changeable = std::span(k_run_columns).subspan(k_fixed_run_columns);
  int index = bind_columns(*update, changeable, record);
  update->bind(index + 1, link.seq).bind(index + 2, link.prev_hash());
  update->bind(index + 3, record.run_id);
  auto rowid = returned_id(*update);
  if (!rowid) {
    explain_not_running(record.run_id);
  }
  return *rowid;
}

void Store::Impl::explain_not_running(const std::string& run_id) {
  Statement select(db, "SELECT status FROM runs WHERE run_id = ?", "look up run " + quoted(run_id));
  select.bind(1, run_id);
  std::string state =
      select.step() ? "its status is already " + select.column_text(0) : "no such run was begun";
  throw Fatal("audit database " + quoted(db.path().string()) + ": cannot complete run " +
              quoted(run_id) + ": " + state + "; fix: see `sandshim audit show " + run_id + "`");
}

Store::Store(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::open(const StoreOptions& options) {
  auto db = options.read_only ? open_for_reading(options) : open_for_writing(options);
  std::optional<AnchorLog> anchor;
  if (!options.read_only && !options.anchor_file.empty()) {
    anchor = open_anchor(*db, options);
  }
  return Store(std::make_unique<Impl>(
      Impl{std::move(db), options.key, std::move(anchor), options.anchor_file}));
}

const ChainKey* Store::key() const {
  return m_impl->key_or_null();
}

const std::filesystem::path& Store::anchor_file() const {
  return m_impl->anchor_file;
}

void Store::anchor_prune(const std::string& chain_id, int64_t seq, const std::string& hash) {
  if (m_impl->anchor) {
    m_impl->anchor->append(
        AnchorEntry{AnchorEntry::Kind::prune, chain_id, seq, hash, wall_clock_ms(), 0});
  }
}

void Store::begin_run(const RunRecord& record) {
  RunRecord running = with_process_identity(record, m_impl->identity);
  running.status = RunStatus::running;
  running.end_ms = 0;
  insert_row<RunRecord>(m_impl->db, "runs", k_run_columns, running);
}

void Store::complete_run(const RunRecord& record) {
  RunRecord finished = finished_copy(record, m_impl->identity);
  Transaction transaction(m_impl->db, Transaction::Mode::immediate);
  ChainLink link = next_link(m_impl->db, m_impl->key_or_null());
  int64_t rowid = m_impl->update_running_run(finished, link);
  AnchorEntry head = seal_linked_row(m_impl->db, k_run_chain, rowid, link, m_impl->key_or_null());
  transaction.commit();
  m_impl->anchor_head(head);
}

void Store::record_finished(const RunRecord& record) {
  RunRecord finished = finished_copy(record, m_impl->identity);
  Transaction transaction(m_impl->db, Transaction::Mode::immediate);
  int64_t rowid = insert_row<RunRecord>(m_impl->db, "runs", k_run_columns, finished);
  AnchorEntry head = m_impl->seal(k_run_chain, rowid);
  transaction.commit();
  m_impl->anchor_head(head);
}

void Store::record_connections(const std::vector<ConnectionRecord>& connections) {
  if (connections.empty()) {
    return;
  }
  Transaction transaction(m_impl->db, Transaction::Mode::immediate);
  for (const auto& c : connections) {
    auto insert = m_impl->db.cached(
        "INSERT INTO connections (run_id, start_ms, method, name, port, address, verdict, reason, "
        "bytes_up, bytes_down, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "record a connection");
    insert->bind(1, c.run_id).bind(2, c.start_ms).bind(3, c.method).bind(4, c.name);
    insert->bind(5, c.port)
        .bind(6, c.address)
        .bind(7, std::string(c.allowed ? "allowed" : "refused"));
    insert->bind(8, c.reason).bind(9, c.bytes_up).bind(10, c.bytes_down).bind(11, c.duration_ms);
    insert->run();
  }
  transaction.commit();
}

std::vector<Store::Impl::DeadRun> Store::Impl::find_dead_runs(const ShimLiveness& is_alive) {
  Statement running(db,
                    "SELECT id, pid, pid_start_ticks, boot_id FROM runs WHERE status = 'running' "
                    "AND host = ?",
                    "look for abandoned runs");
  running.bind(1, host);
  std::vector<DeadRun> dead;
  while (running.step()) {
    ShimProcess shim{static_cast<pid_t>(running.column_int(1)), running.column_int(2),
                     running.column_text(3)};
    if (!is_alive(shim)) {
      dead.push_back(DeadRun{running.column_int(0), shim.pid});
    }
  }
  return dead;
}

std::optional<AnchorEntry> Store::Impl::mark_abandoned(const DeadRun& run) {
  Statement mark(db,
                 "UPDATE runs SET status = 'abandoned', message = ? WHERE id = ? AND status = "
                 "'running' RETURNING id",
                 "mark a run abandoned");
  mark.bind(1, "the shim (pid " + std::to_string(run.pid) +
                   ") ended without completing the run; marked by pid " +
                   std::to_string(::getpid()));
  if (!returned_id(mark.bind(2, run.rowid))) {
    return std::nullopt;  // it completed after all
  }
  return seal(k_run_chain, run.rowid);
}

size_t Store::mark_abandoned_runs(const ShimLiveness& is_alive) {
  auto dead = m_impl->find_dead_runs(is_alive);  // without the write lock: usually none
  if (dead.empty()) {
    return 0;
  }
  Transaction transaction(m_impl->db, Transaction::Mode::immediate);
  size_t marked = 0;
  std::optional<AnchorEntry> head;
  for (const auto& run : dead) {
    if (auto sealed = m_impl->mark_abandoned(run)) {
      head = sealed;
      ++marked;
    }
  }
  transaction.commit();
  m_impl->anchor_head(head);
  logger().info("marked {} run(s) abandoned in {}", marked, quoted(path().string()));
  return marked;
}

std::string Store::record_decision(const DecisionRecord& record) {
  DecisionRecord stored = record;
  if (stored.decision_id.empty()) {
    stored.decision_id = new_record_id();
  }
  Transaction transaction(m_impl->db, Transaction::Mode::immediate);
  int64_t rowid = insert_row<DecisionRecord>(m_impl->db, "decisions", k_decision_columns, stored);
  std::optional<AnchorEntry> head;
  if (stored.is_final()) {
    head = m_impl->seal(k_decision_chain, rowid);
  }
  transaction.commit();
  m_impl->anchor_head(head);
  return stored.decision_id;
}

namespace {

// The caller's latest unchained decision for the tool use gets its outcome; the exit code comes
// from the run of the same tool use when the hook does not know it. The row's id, if one matched.
std::optional<int64_t> complete_latest_decision(Database& db, const std::string& tool_use_id,
                                                const DecisionCompletion& completion,
                                                uint32_t uid) {
  Statement update(
      db,
      "UPDATE decisions SET exit_code = COALESCE(?1, (SELECT exit_code FROM runs WHERE "
      "runs.tool_use_id = ?4 AND ?4 != '' AND runs.uid = ?8 ORDER BY start_ms DESC LIMIT 1)), "
      "completed_ms = ?2, tool_response_tail = ?3, outcome = ?7 "
      "WHERE id = (SELECT id FROM decisions WHERE tool_use_id = ?4 AND tool_use_id != '' "
      "AND chain_seq IS NULL AND COALESCE(uid, ?9) = ?8 "
      "AND (?5 = '' OR session_id = ?6) ORDER BY time_ms DESC LIMIT 1) RETURNING id",
      "complete the decision for " + quoted(tool_use_id));
  int64_t completed_ms = completion.completed_ms != 0 ? completion.completed_ms : wall_clock_ms();
  update.bind(1, optional_int(completion.exit_code)).bind(2, completed_ms);
  update.bind(3, Blob{completion.tool_response_tail}).bind(4, tool_use_id);
  update.bind(5, completion.session_id).bind(6, completion.session_id);
  update.bind(7, completion.outcome).bind(8, static_cast<int64_t>(uid));
  update.bind(9,
              static_cast<int64_t>(::getuid()));  // rows from before the uid column: the writer's
  return returned_id(update);
}

}  // namespace

bool Store::complete_decision(const std::string& tool_use_id, const DecisionCompletion& completion,
                              uint32_t uid) {
  if (tool_use_id.empty()) {
    return false;
  }
  Database& db = m_impl->db;
  Transaction transaction(db, Transaction::Mode::immediate);
  auto rowid = complete_latest_decision(db, tool_use_id, completion, uid);
  if (!rowid) {
    return false;
  }
  AnchorEntry head = m_impl->seal(k_decision_chain, *rowid);
  transaction.commit();
  m_impl->anchor_head(head);
  return true;
}

std::string Store::pending_tool_use_id(const std::string& agent, const std::string& session_id,
                                       const std::string& command, std::optional<uint32_t> uid) {
  Statement select(
      m_impl->db,
      "SELECT tool_use_id FROM decisions WHERE agent = ?1 AND (?2 = '' OR session_id = ?2) AND "
      "(original_command = ?3 OR trim(original_command, ' ' || char(9, 10, 11, 12, 13)) = ?3) "
      "AND chain_seq IS NULL AND tool_use_id != '' "
      "AND (?4 < 0 OR uid = ?4) ORDER BY time_ms DESC LIMIT 1",
      "look up the command's decision");
  select.bind(1, agent).bind(2, session_id).bind(3, command);
  select.bind(4, uid ? static_cast<int64_t>(*uid) : int64_t{-1});
  return select.step() ? select.column_text(0) : "";
}

namespace {

// Closes and chains unfinished decisions: no post-event came, so the command ran only if a run
// joins it (the agent refused it, or it ran no interpreter and the agent never reported back).
std::optional<AnchorEntry> close_unfinished(Database& db, const std::vector<int64_t>& rowids,
                                            const std::function<AnchorEntry(int64_t)>& seal) {
  Statement close(db,
                  "UPDATE decisions SET outcome = CASE WHEN EXISTS (SELECT 1 FROM runs WHERE "
                  "runs.tool_use_id = decisions.tool_use_id AND decisions.tool_use_id != '') "
                  "THEN 'ran' ELSE 'not-run' END, exit_code = (SELECT exit_code FROM runs WHERE "
                  "runs.tool_use_id = decisions.tool_use_id AND decisions.tool_use_id != '' "
                  "ORDER BY start_ms DESC LIMIT 1) WHERE id = ?",
                  "close an unfinished decision");
  std::optional<AnchorEntry> head;
  for (int64_t rowid : rowids) {
    close.bind(1, rowid);
    close.step();
    close.reset();
    head = seal(rowid);
  }
  return head;
}

std::vector<int64_t> selected_ids(Statement& select) {
  std::vector<int64_t> rowids;
  while (select.step()) {
    rowids.push_back(select.column_int(0));
  }
  return rowids;
}

}  // namespace

size_t Store::seal_pending_decisions(std::chrono::milliseconds older_than) {
  Database& db = m_impl->db;
  Transaction transaction(db, Transaction::Mode::immediate);
  Statement pending(db,
                    "SELECT id FROM decisions WHERE chain_seq IS NULL AND time_ms < ? ORDER BY id",
                    "look for unfinished decisions");
  pending.bind(1, wall_clock_ms() - older_than.count());
  return close_selected(pending, transaction);
}

size_t Store::close_session_decisions(const std::string& agent, const std::string& session_id,
                                      uint32_t uid) {
  if (agent.empty() || session_id.empty()) {
    return 0;
  }
  Database& db = m_impl->db;
  Transaction transaction(db, Transaction::Mode::immediate);
  Statement pending(db,
                    "SELECT id FROM decisions WHERE chain_seq IS NULL AND session_id = ?1 "
                    "AND COALESCE(uid, ?3) = ?2 AND agent = ?4 ORDER BY id",
                    "look for the session's unfinished decisions");
  pending.bind(1, session_id).bind(2, static_cast<int64_t>(uid)).bind(4, agent);
  pending.bind(3, static_cast<int64_t>(::getuid()));  // rows from before the uid column
  return close_selected(pending, transaction);
}

size_t Store::close_selected(Statement& pending, Transaction& transaction) {
  std::vector<int64_t> rowids = selected_ids(pending);
  std::optional<AnchorEntry> head = close_unfinished(
      m_impl->db, rowids, [&](int64_t rowid) { return m_impl->seal(k_decision_chain, rowid); });
  transaction.commit();
  m_impl->anchor_head(head);
  return rowids.size();
}

void Store::checkpoint() {
  m_impl->db.execute("PRAGMA wal_checkpoint(TRUNCATE)", "fold the WAL into the file");
}

bool wal_needs_folding(const std::filesystem::path& path) noexcept {
  constexpr std::uintmax_t k_fold_wal_bytes = 256 * 1024;
  std::error_code ec;
  std::uintmax_t size = std::filesystem::file_size(path.string() + "-wal", ec);
  return !ec && size >= k_fold_wal_bytes;
}

bool Store::wal_needs_folding() const noexcept {
  return audit::wal_needs_folding(path());
}

void fold_wal_of(const std::filesystem::path& path) noexcept {
  try {
    Database db(path, OpenMode::read_write, std::chrono::milliseconds(2000));
    db.skip_checkpoint_on_close();
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)", "fold the WAL into the file");
  } catch (const std::exception& error) {
    spdlog::debug("audit: the WAL stays for a later writer: {}", error.what());
  }
}

Database& Store::database() {
  return m_impl->db;
}

const std::filesystem::path& Store::path() const {
  return m_impl->db.path();
}

std::filesystem::path default_database_path() {
  return xdg_directory("state") / "sandshim" / "audit.db";
}

}  // namespace sandshim::audit
