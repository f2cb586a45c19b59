// hostile: output | print 256 MiB to stderr from Node (stderr is relayed and tailed like stdout)
// expect: exit=0 status=ok
// check: flood stderr 268435456
// control: host exit=0
"use strict";
const chunk = Buffer.alloc(1 << 20, "E");
let left = 256;
function write() {
  while (left > 0) {
    left--;
    if (!process.stderr.write(chunk)) {
      process.stderr.once("drain", write);
      return;
    }
  }
}
write();
