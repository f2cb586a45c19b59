// hostile: resources | a memory bomb from Node: 768 MiB of filled buffers (the default cap is 512 MiB)
// expect: exit=137 status=oom
// gap: podman exit=137 status=killed | podman 4.3 on cgroup v1 reports the kill by the memory cap as a plain kill (the run is killed, not oom)
// control: policy sandbox.memory=1g exit=42
"use strict";
const { verdict } = require("./_probe.js");

const blocks = [];
for (let i = 0; i < 12; i++) {
  blocks.push(Buffer.alloc(64 << 20, 1));
}
verdict(true, `held ${blocks.length * 64} MiB`);
