#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "common/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace sandshim::audit {

// Bytes that SQLite stores as a BLOB: output tails and raw argv are not guaranteed to be text.
struct Blob {
  std::string bytes;
  bool operator==(const Blob&) const = default;
};

// One SQL value as SQLite types it; the chain hashes this type, not just the bytes.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, Blob>;

// A failed SQLite call. The message names the file, the reason and the fix, so the top-level
// catch can print it as is; `result_code()` lets callers tell bad input from a broken database.
class SqliteError : public Fatal {
 public:
  SqliteError(const std::string& message, int result_code, std::string sqlite_message)
      : Fatal(message), m_result_code(result_code), m_sqlite_message(std::move(sqlite_message)) {}
  int result_code() const { return m_result_code; }
  int primary_code() const { return m_result_code & 0xff; }
  const std::string& sqlite_message() const { return m_sqlite_message; }

 private:
  int m_result_code;
  std::string m_sqlite_message;
};

enum class OpenMode { read_write, read_only };

class Statement;
class StatementLease;

// One connection (RAII over sqlite3*). Files are opened close-on-exec by SQLite's unix VFS, so
// nothing leaks into the engine process. Not movable: cached statements point back at it.
class Database {
 public:
  Database(const std::filesystem::path& path, OpenMode mode,
           std::chrono::milliseconds busy_timeout);
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more statements that return no rows (schema, pragmas).
  void execute(std::string_view sql, std::string_view action);
  // Reads a single integer, e.g. `PRAGMA user_version`.
  int64_t query_int(std::string_view sql, std::string_view action);
  // Leaves the WAL for a later writer's automatic checkpoint instead of checkpointing (and
  // fsyncing) whenever the last connection closes: each shim is a short process, so closing is
  // the common case and would otherwise cost milliseconds per run.
  void skip_checkpoint_on_close();
  int64_t last_insert_rowid() const;
  int changes() const;
  bool is_read_only() const;
  const std::filesystem::path& path() const { return m_path; }
  std::chrono::milliseconds busy_timeout() const { return m_busy_timeout; }
  sqlite3* handle() const { return m_handle; }

  // A statement prepared once per connection and lent out for one use: the store runs the same
  // few statements for every row, and preparing them dominated bulk writes.
  StatementLease cached(const std::string& sql, std::string_view action);

  // Throws SqliteError for `rc` while doing `action`, with the fix that matches the failure.
  [[noreturn]] void fail(int rc, std::string_view action) const;

 private:
  std::filesystem::path m_path;
  std::chrono::milliseconds m_busy_timeout;
  sqlite3* m_handle = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Statement>> m_cache;  // finalized before close
};

// A prepared statement (RAII over sqlite3_stmt*), bound by 1-based index.
class Statement {
 public:
  Statement(const Database& db, std::string_view sql, std::string_view action);
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  Statement& bind(int index, const SqlValue& value);
  // Advances to the next row; false when done.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset();

  int column_count() const;
  std::string column_name(int column) const;
  SqlValue column(int column) const;
  int64_t column_int(int column) const;
  std::string column_text(int column) const;
  bool column_is_null(int column) const;
  // True when the statement cannot change the database file (sqlite3_stmt_readonly).
  bool is_read_only() const;
  // True when the SQL text held more than one statement.
  bool has_trailing_sql() const { return m_trailing_sql; }

 private:
  const Database* m_db;
  std::string m_action;
  sqlite3_stmt* m_statement = nullptr;
  bool m_trailing_sql = false;
};

// A cached statement on loan: reset and unbound when the loan ends, so it never holds a read
// transaction open or carries old bindings into the next use.
class StatementLease {
 public:
  explicit StatementLease(Statement& statement) : m_statement(&statement) {}
  StatementLease(const StatementLease&) = delete;
  StatementLease& operator=(const StatementLease&) = delete;
  ~StatementLease();
  Statement& operator*() const { return *m_statement; }
  Statement* operator->() const { return m_statement; }

 private:
  Statement* m_statement;
};

// A transaction that rolls back unless committed. Writers use `immediate` so the write lock is
// taken up front and waits under the busy timeout instead of failing on upgrade. Inside another
// transaction it is a savepoint, so bulk writers can batch many store calls in one commit.
class Transaction {
 public:
  enum class Mode { deferred, immediate };
  Transaction(Database& db, Mode mode);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  void commit();

 private:
  Database& m_db;
  bool m_nested;
  bool m_open = true;
};

}  // namespace sandshim::audit
