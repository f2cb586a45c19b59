// hostile: egress | TCP to a listener on the host's loopback (127.0.0.1), from Node
// expect: exit=73 status=error
// control: docker -network +network=host exit=42
// check: listener
"use strict";
const net = require("net");
const { params, verdict } = require("./_probe.js");

const socket = net.connect({ host: "127.0.0.1", port: Number(params().TCP_PORT), timeout: 5000 });
socket.on("connect", () => socket.write("exfiltrated\n"));
socket.on("data", (data) => verdict(data.toString() === "ack\n", "the host's listener answered"));
socket.on("timeout", () => verdict(false, "timed out"));
socket.on("error", (e) => verdict(false, e.code));
