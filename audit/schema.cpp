#include "audit/schema.hpp"

#include <string_view>

#include "audit/run_fields.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

struct Migration {
  int64_t version;
  std::string_view sql;
};

// Each step is frozen once released: a new schema is a new step, never an edit of an old one.
constexpr Migration k_migrations[] = {
    // The runs table itself is made from the field table (run_fields.hpp) before this.
    {1, R"sql(
-- Partial indexes: a row that is not yet chained, or has no tool call, costs them no write.
CREATE UNIQUE INDEX runs_chain ON runs(chain_seq) WHERE chain_seq IS NOT NULL;
CREATE INDEX runs_start ON runs(start_ms);
-- Finished runs by duration, with what stats filter and group by: percentiles are read off it.
CREATE INDEX runs_duration ON runs(duration_ms, start_ms, status, invoked_as, image, agent)
  WHERE duration_ms IS NOT NULL;
-- The few running rows of each host, for marking abandoned runs.
CREATE INDEX runs_running ON runs(host) WHERE status = 'running';
-- Runs counted by day and group, kept by triggers, so stats need not count a million rows.
CREATE TABLE run_counts (
  day INTEGER NOT NULL,
  status TEXT NOT NULL,
  invoked_as TEXT NOT NULL,
  image TEXT NOT NULL,
  agent TEXT NOT NULL,
  runs INTEGER NOT NULL,
  PRIMARY KEY (day, status, invoked_as, image, agent)
) WITHOUT ROWID;
CREATE TRIGGER runs_counted AFTER INSERT ON runs BEGIN
  INSERT INTO run_counts
    VALUES (NEW.start_ms / 86400000, NEW.status, NEW.invoked_as, NEW.image, NEW.agent, 1)
    ON CONFLICT DO UPDATE SET runs = runs + 1;
END;
CREATE TRIGGER runs_recounted AFTER UPDATE OF start_ms, status, invoked_as, image, agent ON runs
BEGIN
  UPDATE run_counts SET runs = runs - 1
    WHERE day = OLD.start_ms / 86400000 AND status = OLD.status AND invoked_as = OLD.invoked_as
      AND image = OLD.image AND agent = OLD.agent;
  INSERT INTO run_counts
    VALUES (NEW.start_ms / 86400000, NEW.status, NEW.invoked_as, NEW.image, NEW.agent, 1)
    ON CONFLICT DO UPDATE SET runs = runs + 1;
END;
CREATE TRIGGER runs_uncounted AFTER DELETE ON runs BEGIN
  UPDATE run_counts SET runs = runs - 1
    WHERE day = OLD.start_ms / 86400000 AND status = OLD.status AND invoked_as = OLD.invoked_as
      AND image = OLD.image AND agent = OLD.agent;
END;
CREATE TABLE chain_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  head_seq INTEGER NOT NULL,
  head_hash TEXT NOT NULL,
  anchor_seq INTEGER NOT NULL,
  anchor_hash TEXT NOT NULL,
  anchor_ms INTEGER
);
INSERT INTO chain_state VALUES (1, 0, printf('%.64d', 0), 0, printf('%.64d', 0), NULL);
)sql"},
    {2, R"sql(
CREATE TABLE decisions (
  id INTEGER PRIMARY KEY,
  decision_id TEXT NOT NULL UNIQUE,
  time_ms INTEGER NOT NULL,
  agent TEXT NOT NULL,
  event TEXT NOT NULL,
  session_id TEXT NOT NULL,
  tool_use_id TEXT NOT NULL,
  cwd TEXT NOT NULL,
  original_command TEXT NOT NULL,
  rewritten_command TEXT NOT NULL,
  decision TEXT NOT NULL,
  reason TEXT NOT NULL,
  rule TEXT NOT NULL,
  payload_bytes INTEGER NOT NULL,
  exit_code INTEGER,
  completed_ms INTEGER,
  tool_response_tail BLOB,
  chain_seq INTEGER,
  prev_hash TEXT,
  row_hash TEXT
);
CREATE UNIQUE INDEX decisions_chain ON decisions(chain_seq) WHERE chain_seq IS NOT NULL;
CREATE INDEX decisions_time ON decisions(time_ms);
CREATE INDEX decisions_tool_use ON decisions(tool_use_id) WHERE tool_use_id != '';
CREATE INDEX runs_tool_use ON runs(tool_use_id) WHERE tool_use_id != '';
)sql"},
    // Decisions (issue 11): what the agent was sent, its approval mode, whether the command ran.
    {3, R"sql(
ALTER TABLE decisions ADD COLUMN answer TEXT;
ALTER TABLE decisions ADD COLUMN permission_mode TEXT;
ALTER TABLE decisions ADD COLUMN outcome TEXT;
)sql"},
    // Audit integrity (issue 12): keyed chain state, per-caller views.
    {4, R"sql(
ALTER TABLE chain_state ADD COLUMN chain_id TEXT NOT NULL DEFAULT '';
ALTER TABLE chain_state ADD COLUMN key_id TEXT;
ALTER TABLE chain_state ADD COLUMN keyed_from_seq INTEGER;
ALTER TABLE chain_state ADD COLUMN state_mac TEXT NOT NULL DEFAULT '';
UPDATE chain_state SET chain_id = lower(hex(randomblob(16)));
ALTER TABLE decisions ADD COLUMN uid INTEGER;
CREATE INDEX runs_uid ON runs(uid, start_ms);
CREATE INDEX decisions_uid ON decisions(uid, time_ms);
)sql"},
    // 5: limit_hit, 6: hidden_count and hidden_globs, 9: via, 10: changed_count and
    // changed_paths, added to runs from the field table.
    // Egress by domain (issue 14): every connection of a run's egress proxy, linked to its run;
    // deleted with the run (prune).
    {7, R"sql(
CREATE TABLE connections (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  method TEXT NOT NULL,
  name TEXT NOT NULL,
  port INTEGER NOT NULL,
  address TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  bytes_up INTEGER NOT NULL,
  bytes_down INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL
);
CREATE INDEX connections_run ON connections(run_id);
CREATE INDEX connections_start ON connections(start_ms);
CREATE TRIGGER runs_connections_deleted AFTER DELETE ON runs BEGIN
  DELETE FROM connections WHERE run_id = OLD.run_id;
END;
)sql"},
    // Audit cost per run (issue 12): run_counts counts finished runs only. Beginning a run no
    // longer writes a count (one page fewer in the WAL), completing it writes one instead of
    // moving one; `stats` counts the few running rows through runs_running.
    {8, R"sql(
DROP TRIGGER runs_counted;
DROP TRIGGER runs_recounted;
DROP TRIGGER runs_uncounted;
DELETE FROM run_counts WHERE status = 'running';
CREATE TRIGGER runs_counted AFTER INSERT ON runs WHEN NEW.status != 'running' BEGIN
  INSERT INTO run_counts
    VALUES (NEW.start_ms / 86400000, NEW.status, NEW.invoked_as, NEW.image, NEW.agent, 1)
    ON CONFLICT DO UPDATE SET runs = runs + 1;
END;
CREATE TRIGGER runs_recounted AFTER UPDATE OF start_ms, status, invoked_as, image, agent ON runs
BEGIN
  UPDATE run_counts SET runs = runs - 1
    WHERE OLD.status != 'running' AND day = OLD.start_ms / 86400000 AND status = OLD.status
      AND invoked_as = OLD.invoked_as AND image = OLD.image AND agent = OLD.agent;
  INSERT INTO run_counts
    SELECT NEW.start_ms / 86400000, NEW.status, NEW.invoked_as, NEW.image, NEW.agent, 1
    WHERE NEW.status != 'running'
    ON CONFLICT DO UPDATE SET runs = runs + 1;
END;
CREATE TRIGGER runs_uncounted AFTER DELETE ON runs WHEN OLD.status != 'running' BEGIN
  UPDATE run_counts SET runs = runs - 1
    WHERE day = OLD.start_ms / 86400000 AND status = OLD.status AND invoked_as = OLD.invoked_as
      AND image = OLD.image AND agent = OLD.agent;
END;
)sql"},
};

static_assert(std::end(k_migrations)[-1].version == k_last_migration_step);

// A version's step: the runs columns it adds (CREATE TABLE for version 1, then an ALTER TABLE
// each), then its own SQL, which may use them.
std::string step_sql(int64_t version) {
  std::string sql;
  std::string declarations;
  for (const auto& field : k_run_fields) {
    if (has_column(field) && field.since == version) {
      std::string declaration = std::string(field.column) + " " + std::string(field.sql_type);
      if (version > 1) {
        sql += "ALTER TABLE runs ADD COLUMN " + declaration + ";\n";
      } else {
        declarations += ",\n  " + declaration;
      }
    }
  }
  if (version == 1) {
    sql = "\nCREATE TABLE runs (\n  id INTEGER PRIMARY KEY" + declarations + "\n);";
  }
  for (const auto& step : k_migrations) {
    if (step.version == version) {
      sql += step.sql;
    }
  }
  return sql;
}

}  // namespace

int64_t schema_version(Database& db) {
  return db.query_int("PRAGMA user_version", "read the schema version");
}

void refuse_newer_schema(const Database& db, int64_t version) {
  if (version <= k_schema_version) {
    return;
  }
  throw Fatal("audit database " + quoted(db.path().string()) + ": cannot use it: schema version " +
              std::to_string(version) + " was written by a newer sandshim (this one knows up to " +
              std::to_string(k_schema_version) +
              "); fix: upgrade sandshim, or set SANDSHIM_AUDIT_DB to another file");
}

void migrate(Database& db, int64_t target) {
  int64_t found = schema_version(db);
  refuse_newer_schema(db, found);
  if (found >= target) {
    return;
  }
  Transaction transaction(db, Transaction::Mode::immediate);
  int64_t version = schema_version(db);  // another process may have upgraded it meanwhile
  refuse_newer_schema(db, version);
  while (version < target) {
    ++version;
    db.execute(step_sql(version), "upgrade the schema to version " + std::to_string(version));
  }
  db.execute("PRAGMA user_version = " + std::to_string(version), "record the schema version");
  transaction.commit();
}

}  // namespace sandshim::audit
