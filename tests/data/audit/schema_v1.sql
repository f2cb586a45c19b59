-- An audit database as schema version 1 wrote it (runs and chain_state, no decisions),
-- with one chained run: the fixture for the forward migration test. Frozen: never edit.
PRAGMA user_version = 1;
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  end_ms INTEGER,
  duration_ms INTEGER,
  invoked_as TEXT NOT NULL,
  argv TEXT NOT NULL,
  argv_raw BLOB NOT NULL,
  cwd TEXT NOT NULL,
  workspace TEXT NOT NULL,
  engine TEXT NOT NULL,
  image TEXT NOT NULL,
  image_digest TEXT NOT NULL,
  container_name TEXT NOT NULL,
  engine_args TEXT NOT NULL,
  policy_digest TEXT NOT NULL,
  policy_sources TEXT NOT NULL,
  limits TEXT NOT NULL,
  exit_code INTEGER,
  signal INTEGER,
  message TEXT NOT NULL,
  stdout_bytes INTEGER NOT NULL,
  stderr_bytes INTEGER NOT NULL,
  stdout_tail BLOB NOT NULL,
  stderr_tail BLOB NOT NULL,
  uid INTEGER NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  parent_name TEXT NOT NULL,
  agent TEXT NOT NULL,
  agent_session TEXT NOT NULL,
  tool_use_id TEXT NOT NULL,
  env_names TEXT NOT NULL,
  warm INTEGER NOT NULL,
  boot_id TEXT NOT NULL,
  pid_start_ticks INTEGER NOT NULL,
  chain_seq INTEGER,
  prev_hash TEXT,
  row_hash TEXT
);
INSERT INTO runs VALUES(1,'v1run','ok',1714550400000,1714550400250,250,'python','["python","-V"]',X'707974686f6e002d5600','/work/app','/work/app','docker','python:3.12-slim','sha256:0123','sandshim-v1run','["docker","run","--rm"]','sha256:abcd','[]','memory=512m',0,NULL,'',14,0,X'507974686f6e20332e31322e330a',X'',1000,'host1',4242,4241,'claude','claude-code','session-1','toolu_v1','["PATH"]',0,'b6a2c9a4-7c1e-4d0e-9f3a-2f1d8c7e6b5a',123456,1,'0000000000000000000000000000000000000000000000000000000000000000','871172bbc9f71203f9df4d5698f574343564ef2f137d1c35b69b9e87a76db8cd');
CREATE TABLE run_counts (
  day INTEGER NOT NULL,
  status TEXT NOT NULL,
  invoked_as TEXT NOT NULL,
  image TEXT NOT NULL,
  agent TEXT NOT NULL,
  runs INTEGER NOT NULL,
  PRIMARY KEY (day, status, invoked_as, image, agent)
) WITHOUT ROWID;
INSERT INTO run_counts VALUES(19844,'ok','python','python:3.12-slim','claude-code',1);
CREATE TABLE chain_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  head_seq INTEGER NOT NULL,
  head_hash TEXT NOT NULL,
  anchor_seq INTEGER NOT NULL,
  anchor_hash TEXT NOT NULL,
  anchor_ms INTEGER
);
INSERT INTO chain_state VALUES(1,1,'871172bbc9f71203f9df4d5698f574343564ef2f137d1c35b69b9e87a76db8cd',0,'0000000000000000000000000000000000000000000000000000000000000000',NULL);
CREATE UNIQUE INDEX runs_chain ON runs(chain_seq) WHERE chain_seq IS NOT NULL;
CREATE INDEX runs_start ON runs(start_ms);
CREATE INDEX runs_duration ON runs(duration_ms, start_ms, status, invoked_as, image, agent)
  WHERE duration_ms IS NOT NULL;
CREATE INDEX runs_running ON runs(host) WHERE status = 'running';
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
COMMIT;
