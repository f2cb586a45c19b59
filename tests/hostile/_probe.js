// Shared by the Node probes: the verdict exit codes and the run's parameters (see _probe.py).
"use strict";
const fs = require("fs");
const path = require("path");

const ESCAPED = 42;
const BLOCKED = 73;

function params() {
  const text = fs.readFileSync(path.join(__dirname, "params"), "utf8");
  const result = {};
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) {
      result[line.slice(0, at)] = line.slice(at + 1);
    }
  }
  return result;
}

function verdict(escaped, why) {
  console.log((escaped ? "ESCAPED: " : "blocked: ") + why);
  process.exit(escaped ? ESCAPED : BLOCKED);
}

module.exports = { ESCAPED, BLOCKED, params, verdict };
