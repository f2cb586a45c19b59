// hostile: secrets | a token from the environment (process.env)
// expect: exit=73 status=error
// control: host exit=42
"use strict";
const { verdict } = require("./_probe.js");

const found = Object.keys(process.env).filter((name) => process.env[name].startsWith("canary-"));
verdict(found.length > 0, found.length ? "found " + found.join(" ") : "no canary in process.env");
