// hostile: lifecycle | leave a daemon behind from Node: a detached, unref'd child
// expect: exit=0 status=ok
// control: host exit=0 leaves=daemon
"use strict";
const childProcess = require("child_process");
const { params } = require("./_probe.js");

const seconds = params().DAEMON_SECONDS;
childProcess.spawn("sleep", [seconds], { detached: true, stdio: "ignore" }).unref();
console.log(`left sleep ${seconds} running, detached`);
