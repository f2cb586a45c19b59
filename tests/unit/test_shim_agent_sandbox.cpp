#include <catch2/catch.hpp>

#include "engine/agent_sandbox.hpp"

using sandshim::shim::engine_socket_refused_fix;

namespace {

const std::string k_engine_hint =
    "you may not use the engine socket: `sudo usermod -aG docker "
    "$USER`, then log in again";
const std::string k_seccomp =
    "permission denied while trying to connect to the docker API at unix:///var/run/docker.sock: "
    "dial unix /var/run/docker.sock: connect: operation not permitted";

}  // namespace

TEST_CASE("an engine socket refused by Codex's sandbox names Codex's setting, not usermod",
          "[shim][engine]") {
  std::string fix = engine_socket_refused_fix(k_seccomp, "codex", true, k_engine_hint);
  CHECK(fix.find("network_access = true") != std::string::npos);
  CHECK(fix.find("usermod") == std::string::npos);
  CHECK(engine_socket_refused_fix(k_seccomp, "claude-code", false, k_engine_hint)
            .find("Claude Code's sandbox") != std::string::npos);
}

TEST_CASE("root is never told to join the docker group", "[shim][engine]") {
  std::string denied = "dial unix /var/run/docker.sock: connect: permission denied";
  CHECK(engine_socket_refused_fix(denied, "", false, k_engine_hint) == k_engine_hint);
  std::string as_root = engine_socket_refused_fix(denied, "", true, k_engine_hint);
  CHECK(as_root.find("usermod") == std::string::npos);
  CHECK(as_root.starts_with("root may not use the engine socket"));
}
