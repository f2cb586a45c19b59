// hostile: exec | Node drops an executable in /tmp and spawns it
// expect: exit=73 status=error
// control: docker -tmpfs +tmpfs=/tmp:rw,exec,nosuid,nodev,size=67108864 exit=42
"use strict";
const childProcess = require("child_process");
const fs = require("fs");
const { verdict } = require("./_probe.js");

fs.copyFileSync("/usr/bin/id", "/tmp/dropped");
fs.chmodSync("/tmp/dropped", 0o755);
try {
  childProcess.execFileSync("/tmp/dropped");
} catch (e) {
  verdict(false, e.code);
}
verdict(true, "spawned /tmp/dropped");
