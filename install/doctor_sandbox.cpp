#include "install/doctor_sandbox.hpp"

#include "common/strings.hpp"

namespace sandshim::install {

namespace {

Finding socket_refused(const std::string& on, const std::string& socket, bool broker) {
  std::string refused = on + " and refuses " + socket + ": sandboxed python, node and sh exit 125";
  if (broker) {
    return {"sandbox", Status::fail, refused,
            "`sandshim install agent claude` again (it adds " +
                std::string(k_claude_all_unix_sockets) + ")"};
  }
  return {"sandbox", Status::warn, refused,
          "use the broker (install/setup.sh), or turn Claude Code's sandbox off"};
}

Finding sockets_allowed(const ClaudeSandbox& sandbox, const std::string& on,
                        const std::string& socket, const SandboxFacts& facts) {
  std::string allowed = on + "; allowAllUnixSockets (" + sandbox.all_unix_sockets_in +
                        ") lets its commands reach " + socket +
                        ", and every other unix socket they may open (Linux allows none by path)";
  if (!facts.broker) {
    return {"sandbox", Status::warn, allowed + ": in direct mode, the engine itself",
            "use the broker (install/setup.sh)"};
  }
  if (!facts.root && !facts.engine_ways.empty()) {
    return {"sandbox", Status::warn,
            allowed + ", the engine's too: this uid " + join(facts.engine_ways, ", "),
            "`sudo gpasswd -d " + facts.user + " docker`, then log in again"};
  }
  return {"sandbox", Status::ok, allowed, ""};
}

}  // namespace

Finding claude_sandbox_finding(const ClaudeSandbox& sandbox, const SandboxFacts& facts) {
  if (!sandbox.enabled) {
    return {"sandbox", Status::ok, "Claude Code's own sandbox is off: sandshim is the sandbox", ""};
  }
  std::string on = "Claude Code's own sandbox is on (" + sandbox.enabled_in + ")";
  std::string socket =
      facts.broker ? "the broker's socket " + facts.broker_socket : "the engine's socket";
  if (!sandbox.all_unix_sockets.value_or(false)) {
    return socket_refused(on, socket, facts.broker);
  }
  return sockets_allowed(sandbox, on, socket, facts);
}

}  // namespace sandshim::install
