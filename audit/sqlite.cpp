#include "audit/sqlite.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <climits>
#include <utility>

#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

struct FailureAdvice {
  int primary_code;
  std::string_view fix;  // {file}, {dir}, {uid} and {timeout} are filled in
};

// What the user can do about each kind of failure; the first entry that matches wins.
constexpr FailureAdvice k_advice[] = {
    {SQLITE_CANTOPEN,
     "make {dir} and {file} readable and writable by uid {uid}, or set SANDSHIM_AUDIT_DB to "
     "another file"},
    {SQLITE_READONLY,
     "give uid {uid} write access to {file} and {dir} (chmod u+w), or set SANDSHIM_AUDIT_DB to a "
     "writable file"},
    {SQLITE_PERM,
     "give uid {uid} write access to {file}, or set SANDSHIM_AUDIT_DB to another file"},
    {SQLITE_AUTH,
     "give uid {uid} write access to {file}, or set SANDSHIM_AUDIT_DB to another file"},
    {SQLITE_NOTADB,
     "the file was left untouched: move it aside (mv {file} {file}.corrupt) and sandshim starts a "
     "new database"},
    {SQLITE_CORRUPT,
     "the file was left untouched: keep a copy, try `sqlite3 {file} .recover`, then move it aside "
     "(mv {file} {file}.corrupt)"},
    {SQLITE_BUSY,
     "another process held the database longer than the busy timeout ({timeout} ms): find it with "
     "`fuser {file}` or retry"},
    {SQLITE_LOCKED, "another connection holds a lock on the database: retry"},
    {SQLITE_FULL, "free space on the file system that holds {file}"},
    {SQLITE_IOERR, "check the disk and the file system that hold {file} (dmesg)"},
    {SQLITE_NOMEM, "free memory and retry"},
};

constexpr std::string_view k_default_fix =
    "run `sandshim audit verify` and report the message if it persists";

std::string replace_all(std::string text, std::string_view from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string fix_for(int rc, const std::filesystem::path& file, std::chrono::milliseconds timeout) {
  std::string fix(k_default_fix);
  for (const auto& advice : k_advice) {
    if (advice.primary_code == (rc & 0xff)) {
      fix = advice.fix;
      break;
    }
  }
  fix = replace_all(fix, "{file}", file.string());
  fix = replace_all(fix, "{dir}", file.parent_path().string());
  fix = replace_all(fix, "{uid}", std::to_string(::geteuid()));
  return replace_all(fix, "{timeout}", std::to_string(timeout.count()));
}

int to_int_size(size_t size) {
  if (size > static_cast<size_t>(INT_MAX)) {
    throw Fatal("internal error: a value of " + std::to_string(size) + " bytes is too large");
  }
  return static_cast<int>(size);
}

}  // namespace

Database::Database(const std::filesystem::path& path, OpenMode mode,
                   std::chrono::milliseconds busy_timeout)
    : m_path(path), m_busy_timeout(busy_timeout) {
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
              (mode == OpenMode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
  int rc = sqlite3_open_v2(path.c_str(), &m_handle, flags, nullptr);
  if (rc != SQLITE_OK) {
    // A failed open still allocates the handle, and no destructor runs for a throwing
    // constructor: close it once its message is taken.
    try {
      fail(rc, "open it");
    } catch (...) {
      sqlite3_close_v2(std::exchange(m_handle, nullptr));
      throw;
    }
  }
  sqlite3_extended_result_codes(m_handle, 1);
  sqlite3_busy_timeout(m_handle, static_cast<int>(busy_timeout.count()));
}

Database::~Database() {
  m_cache.clear();
  sqlite3_close_v2(m_handle);
}

StatementLease Database::cached(const std::string& sql, std::string_view action) {
  auto& slot = m_cache[sql];
  if (!slot) {
    slot = std::make_unique<Statement>(*this, sql, action);
  }
  return StatementLease(*slot);
}

StatementLease::~StatementLease() {
  m_statement->reset();
}

void Database::execute(std::string_view sql, std::string_view action) {
  int rc = sqlite3_exec(m_handle, std::string(sql).c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    fail(rc, action);
  }
}

int64_t Database::query_int(std::string_view sql, std::string_view action) {
  Statement statement(*this, sql, action);
  if (!statement.step()) {
    fail(SQLITE_ERROR, action);
  }
  return statement.column_int(0);
}

void Database::skip_checkpoint_on_close() {
  int rc = sqlite3_db_config(m_handle, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  if (rc != SQLITE_OK) {
    fail(rc, "configure the connection");
  }
}

int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(m_handle);
}

int Database::changes() const {
  return sqlite3_changes(m_handle);
}

bool Database::is_read_only() const {
  return sqlite3_db_readonly(m_handle, "main") == 1;
}

void Database::fail(int rc, std::string_view action) const {
  bool has_message = m_handle != nullptr && sqlite3_errcode(m_handle) != SQLITE_OK;
  std::string detail = has_message ? sqlite3_errmsg(m_handle) : sqlite3_errstr(rc);
  std::string message = "audit database " + quoted(m_path.string()) + ": cannot " +
                        std::string(action) + ": " + detail +
                        "; fix: " + fix_for(rc, m_path, m_busy_timeout);
  throw SqliteError(message, rc, detail);
}

Statement::Statement(const Database& db, std::string_view sql, std::string_view action)
    : m_db(&db), m_action(action) {
  const char* tail = nullptr;
  int rc =
      sqlite3_prepare_v2(db.handle(), sql.data(), to_int_size(sql.size()), &m_statement, &tail);
  if (rc != SQLITE_OK) {
    db.fail(rc, action);
  }
  m_trailing_sql = !trim(std::string_view(tail, sql.data() + sql.size() - tail)).empty();
}

Statement::Statement(Statement&& other) noexcept
    : m_db(other.m_db),
      m_action(std::move(other.m_action)),
      m_statement(std::exchange(other.m_statement, nullptr)),
      m_trailing_sql(other.m_trailing_sql) {}

Statement::~Statement() {
  sqlite3_finalize(m_statement);
}

Statement& Statement::bind(int index, const SqlValue& value) {
  int rc = SQLITE_OK;
  if (std::holds_alternative<std::monostate>(value)) {
    rc = sqlite3_bind_null(m_statement, index);
  } else if (const auto* number = std::get_if<int64_t>(&value)) {
    rc = sqlite3_bind_int64(m_statement, index, *number);
  } else if (const auto* real = std::get_if<double>(&value)) {
    rc = sqlite3_bind_double(m_statement, index, *real);
  } else if (const auto* text = std::get_if<std::string>(&value)) {
    rc = sqlite3_bind_text(m_statement, index, text->data(), to_int_size(text->size()),
                           SQLITE_TRANSIENT);
  } else {
    const auto& bytes = std::get<Blob>(value).bytes;
    rc = sqlite3_bind_blob(m_statement, index, bytes.data(), to_int_size(bytes.size()),
                           SQLITE_TRANSIENT);
  }
  if (rc != SQLITE_OK) {
    m_db->fail(rc, m_action);
  }
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(m_statement);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  sqlite3_reset(m_statement);
  m_db->fail(rc, m_action);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(m_statement);
  sqlite3_clear_bindings(m_statement);
}

int Statement::column_count() const {
  return sqlite3_column_count(m_statement);
}

std::string Statement::column_name(int column) const {
  const char* name = sqlite3_column_name(m_statement, column);
  return name != nullptr ? name : "";
}

SqlValue Statement::column(int column) const {
  switch (sqlite3_column_type(m_statement, column)) {
    case SQLITE_NULL:
      return std::monostate{};
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(m_statement, column));
    case SQLITE_BLOB:
      return Blob{column_text(column)};
    case SQLITE_FLOAT:
      return sqlite3_column_double(m_statement, column);
    default:
      return column_text(column);
  }
}

int64_t Statement::column_int(int column) const {
  return sqlite3_column_int64(m_statement, column);
}

std::string Statement::column_text(int column) const {
  // sqlite3_column_blob returns the raw bytes for TEXT too, without conversion.
  const void* data = sqlite3_column_blob(m_statement, column);
  int size = sqlite3_column_bytes(m_statement, column);
  return data != nullptr ? std::string(static_cast<const char*>(data), static_cast<size_t>(size))
                         : std::string();
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(m_statement, column) == SQLITE_NULL;
}

bool Statement::is_read_only() const {
  return sqlite3_stmt_readonly(m_statement) != 0;
}

Transaction::Transaction(Database& db, Mode mode)
    : m_db(db), m_nested(sqlite3_get_autocommit(db.handle()) == 0) {
  if (m_nested) {
    m_db.execute("SAVEPOINT nested", "start a savepoint");
  } else {
    // Prepared once per connection: a writer begins and commits twice a run.
    m_db.cached(mode == Mode::immediate ? "BEGIN IMMEDIATE" : "BEGIN", "start a transaction")
        ->run();
  }
}

Transaction::~Transaction() {
  if (m_open) {
    const char* undo = m_nested ? "ROLLBACK TO nested; RELEASE nested" : "ROLLBACK";
    sqlite3_exec(m_db.handle(), undo, nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  if (m_nested) {
    m_db.execute("RELEASE nested", "commit");
  } else {
    m_db.cached("COMMIT", "commit")->run();
  }
  m_open = false;
}

}  // namespace sandshim::audit
