#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "shim/policy.hpp"

namespace sandshim::shim {

// The container engine client, found and configured so that nothing from the caller steers
// it: an absolute path, and an environment built from the policy alone.
struct Engine {
  std::string kind;              // docker | podman
  std::filesystem::path client;  // absolute path of the client binary
  std::vector<std::string> env;  // the client's complete environment
  std::string endpoint;          // empty: local

  // "docker", or "docker@ssh://host" for a remote engine, for records and messages.
  std::string describe() const;
  // The client's environment plus variables whose values reach the container through `-e NAME`,
  // so values never appear in the process list.
  std::vector<std::string> env_with(
      const std::vector<std::pair<std::string, std::string>>& passed) const;
};

// Finds the engine client on the policy's search path, never sandshim itself or its shim
// directory. Throws Fatal (exit 125) with the fix when there is none.
Engine locate_engine(const Policy& policy);

// The fixed environment of the engine client for this policy.
std::vector<std::string> engine_environment(const Policy& policy);

// The engine client's own configuration directory: empty, so a user's `proxies` or
// credential helpers in ~/.docker/config.json never inject anything into a sandbox.
std::filesystem::path engine_config_dir();

}  // namespace sandshim::shim
