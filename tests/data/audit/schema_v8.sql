-- An audit database as schema version 8 wrote it (the code of commit 6899e45, before the run
-- field table): two unkeyed runs and a denied decision, then keyed with the secret of 32 "k"
-- bytes from position 4 on, one keyed run and one still running. Frozen: never edit.
PRAGMA user_version = 8;
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
INSERT INTO runs VALUES(1,'v8a','ok',1788000000000,1788000000321,321,'python','["python","-c","print(1)","��"]',X'707974686f6e002d63007072696e7428312900fffe00','/home/dev/app','/home/dev/app','docker','python:3.12-slim','sha256:00112233','sandshim-v8a','["run","--rm","--network=none"]','abcd','["/etc/sandshim/config.toml"]','memory=512m cpus=1 pids=64 timeout=30s',0,NULL,'',2,0,X'310a',X'62616420c3',1000,'fixture-host',4242,4241,'claude','claude-code','sess-1','toolu_v8a','["PATH","HOME"]',1,'f57cf300-62ff-4ada-b724-a61c2940d788',0,1,'0000000000000000000000000000000000000000000000000000000000000000','659addb4d6920bcac02307694be9f07c539415acc4471d7209ebf42f5852e428','',1,'[".env"]');
INSERT INTO runs VALUES(2,'v8b','refused',1788000001000,1788000001321,321,'python','["python","-c","print(1)","��"]',X'707974686f6e002d63007072696e7428312900fffe00','/home/dev/app','/home/dev/app','docker','python:3.12-slim','sha256:00112233','sandshim-v8b','["run","--rm","--network=none"]','abcd','["/etc/sandshim/config.toml"]','memory=512m cpus=1 pids=64 timeout=30s',NULL,NULL,'refused by policy',2,0,X'310a',X'62616420c3',1000,'fixture-host',4242,4241,'claude','claude-code','sess-1','toolu_v8b','["PATH","HOME"]',0,'f57cf300-62ff-4ada-b724-a61c2940d788',0,2,'659addb4d6920bcac02307694be9f07c539415acc4471d7209ebf42f5852e428','d4105de3a4980ea12b673cc1dd27fc76bbfc1cd626a7d6ba8412ed693811d48f','',1,'[".env"]');
INSERT INTO runs VALUES(3,'v8c','error',1788000002000,1788000002321,321,'python','["python","-c","print(1)","��"]',X'707974686f6e002d63007072696e7428312900fffe00','/home/dev/app','/home/dev/app','docker','python:3.12-slim','sha256:00112233','sandshim-v8c','["run","--rm","--network=none"]','abcd','["/etc/sandshim/config.toml"]','memory=512m cpus=1 pids=64 timeout=30s',3,NULL,'',2,0,X'310a',X'62616420c3',1000,'fixture-host',4242,4241,'claude','claude-code','sess-1','toolu_v8c','["PATH","HOME"]',0,'f57cf300-62ff-4ada-b724-a61c2940d788',0,4,'ad4abe32e56ce9cbf79e95222af4239f7de4511a63d692863841df06b1fadd40','128855bcc47414d6eecbda50337fda8099341a52b19784bdf211b8ba7417a60b','sandbox.pids',1,'[".env"]');
INSERT INTO runs VALUES(4,'v8running','running',1788000003000,NULL,NULL,'python','["python","-c","print(1)","��"]',X'707974686f6e002d63007072696e7428312900fffe00','/home/dev/app','/home/dev/app','docker','python:3.12-slim','sha256:00112233','sandshim-v8running','["run","--rm","--network=none"]','abcd','["/etc/sandshim/config.toml"]','memory=512m cpus=1 pids=64 timeout=30s',0,NULL,'',2,0,X'310a',X'62616420c3',1000,'fixture-host',4242,4241,'claude','claude-code','sess-1','toolu_v8running','["PATH","HOME"]',1,'f57cf300-62ff-4ada-b724-a61c2940d788',0,NULL,NULL,NULL,'',1,'[".env"]');
CREATE TABLE run_counts (
  day INTEGER NOT NULL,
  status TEXT NOT NULL,
  invoked_as TEXT NOT NULL,
  image TEXT NOT NULL,
  agent TEXT NOT NULL,
  runs INTEGER NOT NULL,
  PRIMARY KEY (day, status, invoked_as, image, agent)
) WITHOUT ROWID;
INSERT INTO run_counts VALUES(20694,'error','python','python:3.12-slim','claude-code',1);
INSERT INTO run_counts VALUES(20694,'ok','python','python:3.12-slim','claude-code',1);
INSERT INTO run_counts VALUES(20694,'refused','python','python:3.12-slim','claude-code',1);
CREATE TABLE chain_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  head_seq INTEGER NOT NULL,
  head_hash TEXT NOT NULL,
  anchor_seq INTEGER NOT NULL,
  anchor_hash TEXT NOT NULL,
  anchor_ms INTEGER
, chain_id TEXT NOT NULL DEFAULT '', key_id TEXT, keyed_from_seq INTEGER, state_mac TEXT NOT NULL DEFAULT '');
INSERT INTO chain_state VALUES(1,4,'128855bcc47414d6eecbda50337fda8099341a52b19784bdf211b8ba7417a60b',0,'0000000000000000000000000000000000000000000000000000000000000000',NULL,'867ff92a1396098d50ae557c31bf7da7','dce52ddfaf9f5c6a',4,'588a1d6de77067a426bee32b7c7ace18209ec6a9a8335f0bffec32f8fa063e86');
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
INSERT INTO decisions VALUES(1,'dec-v8a',1788000000500,'claude-code','PreToolUse','sess-1','toolu_v8d','/home/dev/app','rm -rf /','','deny','no','deny.rm',0,NULL,NULL,NULL,3,'d4105de3a4980ea12b673cc1dd27fc76bbfc1cd626a7d6ba8412ed693811d48f','ad4abe32e56ce9cbf79e95222af4239f7de4511a63d692863841df06b1fadd40','deny','default',NULL,1000);
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
COMMIT;
