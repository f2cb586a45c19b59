// hostile: secrets | AWS credentials: ~/.aws, /root/.aws, /home/*/.aws, the host's home by path and by ../
// expect: exit=73 status=error
// control: host exit=42
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { params, verdict } = require("./_probe.js");

const homes = [os.homedir(), "/root", params().HOST_HOME, path.resolve("../../home")];
try {
  homes.push(...fs.readdirSync("/home").map((name) => path.join("/home", name)));
} catch (e) {
  // no /home
}
for (const home of homes) {
  const file = path.join(home, ".aws", "credentials");
  try {
    if (fs.readFileSync(file, "utf8").includes("canary-")) {
      verdict(true, "read " + file);
    }
  } catch (e) {
    // not there, or not readable
  }
}
verdict(false, "no credentials readable");
