-- An audit database as schema version 7 wrote it: three chained runs (sandshim_audit_bench
-- generate at schema 7) and one begun and still running: the fixture for migration 8. Frozen:
-- never edit.
PRAGMA user_version = 7;
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
, limit_hit TEXT, hidden_count INTEGER, hidden_globs TEXT);
INSERT INTO runs VALUES(1,'gen-0','refused',1788393244597,1788393245537,940,'node','["python","-c","import sys; print(sys.version)"]',X'707974686f6e002d6300696d706f7274207379733b207072696e74287379732e76657273696f6e2900','/home/dev/src/app','/home/dev/src/app','docker','python:3.13-slim','sha256:4d3c2b1a0f9e8d7c6b5a49382716059483726150493827160594837261504938','sandshim-gen-0','["docker","run","--rm","-i","--network=none","--read-only","--cap-drop=ALL","--security-opt=no-new-privileges","--pids-limit=64","--memory=512m","--cpus=1","--user=1000:1000"]','sha256:91ab','["/home/dev/.config/sandshim/policy.toml"]','memory=512m cpus=1 pids=64 timeout=30s',1,NULL,'',42,0,X'332e31322e3320286d61696e2c2041707220313020323032342c2030353a33333a343729205b4743432031322e322e305d0a',X'',0,'v7-host',7699,7696,'claude','unknown','6f1c2d3e-0000-4000-8000-000000000000','','["PATH","HOME","LANG","TERM"]',0,'00000000-0000-4000-8000-000000000007',5347408,1,'0000000000000000000000000000000000000000000000000000000000000000','9d153d9a04f5ef2194db9f8fea51734ac1b15bb76dfdb44d5665b4452ccc1e63','',0,'[]');
INSERT INTO runs VALUES(2,'gen-1','ok',1788393252373,1788393252413,40,'node','["python","-c","import sys; print(sys.version)"]',X'707974686f6e002d6300696d706f7274207379733b207072696e74287379732e76657273696f6e2900','/home/dev/src/app','/home/dev/src/app','docker','python:3.11-slim','sha256:4d3c2b1a0f9e8d7c6b5a49382716059483726150493827160594837261504938','sandshim-gen-1','["docker","run","--rm","-i","--network=none","--read-only","--cap-drop=ALL","--security-opt=no-new-privileges","--pids-limit=64","--memory=512m","--cpus=1","--user=1000:1000"]','sha256:91ab','["/home/dev/.config/sandshim/policy.toml"]','memory=512m cpus=1 pids=64 timeout=30s',0,NULL,'',42,0,X'332e31322e3320286d61696e2c2041707220313020323032342c2030353a33333a343729205b4743432031322e322e305d0a',X'',0,'v7-host',7699,7696,'claude','claude-code','6f1c2d3e-0000-4000-8000-000000000000','','["PATH","HOME","LANG","TERM"]',0,'00000000-0000-4000-8000-000000000007',5347408,2,'9d153d9a04f5ef2194db9f8fea51734ac1b15bb76dfdb44d5665b4452ccc1e63','354b637392497879ceee509b4ffb8e28187f9c58474e083a08b5aecfafc90634','',0,'[]');
INSERT INTO runs VALUES(3,'gen-2','ok',1788393260149,1788393261567,1418,'node','["python","-c","import sys; print(sys.version)"]',X'707974686f6e002d6300696d706f7274207379733b207072696e74287379732e76657273696f6e2900','/home/dev/src/app','/home/dev/src/app','docker','python:3.12-slim','sha256:4d3c2b1a0f9e8d7c6b5a49382716059483726150493827160594837261504938','sandshim-gen-2','["docker","run","--rm","-i","--network=none","--read-only","--cap-drop=ALL","--security-opt=no-new-privileges","--pids-limit=64","--memory=512m","--cpus=1","--user=1000:1000"]','sha256:91ab','["/home/dev/.config/sandshim/policy.toml"]','memory=512m cpus=1 pids=64 timeout=30s',0,NULL,'',42,0,X'332e31322e3320286d61696e2c2041707220313020323032342c2030353a33333a343729205b4743432031322e322e305d0a',X'',0,'v7-host',7699,7696,'claude','claude-code','6f1c2d3e-0000-4000-8000-000000000000','','["PATH","HOME","LANG","TERM"]',0,'00000000-0000-4000-8000-000000000007',5347408,3,'354b637392497879ceee509b4ffb8e28187f9c58474e083a08b5aecfafc90634','401ef73e3cf80d5b13fcfdd48bac63b96f4f8af24006f7175bc2f253b55625fa','',0,'[]');
INSERT INTO runs VALUES(4,'v7running','running',1788393261149,NULL,NULL,'node','["python","-c","import sys; print(sys.version)"]',X'707974686f6e002d6300696d706f7274207379733b207072696e74287379732e76657273696f6e2900','/home/dev/src/app','/home/dev/src/app','docker','python:3.12-slim','','sandshim-v7running','["docker","run","--rm","-i","--network=none","--read-only","--cap-drop=ALL","--security-opt=no-new-privileges","--pids-limit=64","--memory=512m","--cpus=1","--user=1000:1000"]','sha256:91ab','["/home/dev/.config/sandshim/policy.toml"]','memory=512m cpus=1 pids=64 timeout=30s',NULL,NULL,'',0,0,X'',X'',0,'v7-host',7699,7696,'claude','claude-code','6f1c2d3e-0000-4000-8000-000000000000','toolu_v7','["PATH","HOME","LANG","TERM"]',0,'00000000-0000-4000-8000-000000000007',5347408,NULL,NULL,NULL,'',0,'[]');
CREATE TABLE run_counts (
  day INTEGER NOT NULL,
  status TEXT NOT NULL,
  invoked_as TEXT NOT NULL,
  image TEXT NOT NULL,
  agent TEXT NOT NULL,
  runs INTEGER NOT NULL,
  PRIMARY KEY (day, status, invoked_as, image, agent)
) WITHOUT ROWID;
INSERT INTO run_counts VALUES(20698,'ok','node','python:3.11-slim','claude-code',1);
INSERT INTO run_counts VALUES(20698,'ok','node','python:3.12-slim','claude-code',1);
INSERT INTO run_counts VALUES(20698,'refused','node','python:3.13-slim','unknown',1);
INSERT INTO run_counts VALUES(20698,'running','node','python:3.12-slim','claude-code',1);
CREATE TABLE chain_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  head_seq INTEGER NOT NULL,
  head_hash TEXT NOT NULL,
  anchor_seq INTEGER NOT NULL,
  anchor_hash TEXT NOT NULL,
  anchor_ms INTEGER
, chain_id TEXT NOT NULL DEFAULT '', key_id TEXT, keyed_from_seq INTEGER, state_mac TEXT NOT NULL DEFAULT '');
INSERT INTO chain_state VALUES(1,3,'401ef73e3cf80d5b13fcfdd48bac63b96f4f8af24006f7175bc2f253b55625fa',0,'0000000000000000000000000000000000000000000000000000000000000000',NULL,'104a0d2177a2dc4f666f796f9791b385',NULL,NULL,'');
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
, answer TEXT, permission_mode TEXT, outcome TEXT, uid INTEGER);
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
CREATE UNIQUE INDEX decisions_chain ON decisions(chain_seq) WHERE chain_seq IS NOT NULL;
CREATE INDEX decisions_time ON decisions(time_ms);
CREATE INDEX decisions_tool_use ON decisions(tool_use_id) WHERE tool_use_id != '';
CREATE INDEX runs_tool_use ON runs(tool_use_id) WHERE tool_use_id != '';
CREATE INDEX runs_uid ON runs(uid, start_ms);
CREATE INDEX decisions_uid ON decisions(uid, time_ms);
CREATE INDEX connections_run ON connections(run_id);
CREATE INDEX connections_start ON connections(start_ms);
CREATE TRIGGER runs_connections_deleted AFTER DELETE ON runs BEGIN
  DELETE FROM connections WHERE run_id = OLD.run_id;
END;
COMMIT;
