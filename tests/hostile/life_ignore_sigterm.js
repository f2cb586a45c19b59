// hostile: lifecycle | Node ignores SIGTERM and keeps running; the harness sends SIGTERM to the shim after 1.5 s
// expect: exit=143 status=killed
// signal: TERM 1.5
// control: host signal=TERM@1 deadline=2 exit=137
"use strict";
process.on("SIGTERM", () => console.log("SIGTERM ignored"));
console.log("ignoring SIGTERM");
setInterval(() => {}, 1000);
