#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace sandshim::shim {

// What an engine says about itself in `docker info` / `podman info`: the facts that decide
// whether the memory, cpu and pids limits of a run are really enforced.
struct EngineFacts {
  std::string kind;            // docker | podman
  std::string server_version;  // the engine's (server's) version
  std::string cgroup_version;  // "1", "2", or empty when the engine does not say
  std::string cgroup_driver;   // cgroupfs | systemd | none
  std::string runtime;         // the default OCI runtime (runc, crun, ...)
  std::string engine_id;       // docker's daemon id; empty for podman
  bool rootless = false;
  bool seccomp = false;
  bool apparmor = false;
  bool selinux = false;
  bool memory = false;                // --memory
  bool swap = false;                  // --memory-swap (no swap on top of the memory limit)
  bool cpu = false;                   // --cpus (CFS quota, or cpu.max on cgroup v2)
  bool pids = false;                  // --pids-limit
  bool cpuset = false;                // --cpuset-cpus (the CPUs a container sees)
  std::vector<std::string> warnings;  // the engine's own warnings, as it wrote them
};

// Parses `docker info --format '{{json .}}'`. Throws Fatal when the text is not that JSON or
// the client could not reach the daemon (it still prints a JSON object then, all false).
EngineFacts parse_docker_info(const std::string& json);
// Parses `podman info --format json`.
EngineFacts parse_podman_info(const std::string& json);

// The facts as JSON text and back, for the cache and `doctor --json`.
std::string facts_to_json(const EngineFacts& facts);
EngineFacts facts_from_json(const std::string& json);

// Which of the run's limits the engine enforces. Names are the limits of `limits_summary`:
// memory, swap, cpus, pids.
struct Enforcement {
  std::vector<std::string> enforced;
  std::vector<std::string> unenforced;
  std::string reason;  // why the unenforced ones are not, and what fixes it; empty when none
};
Enforcement assess_enforcement(const EngineFacts& facts);

// `enforced=memory,swap,cpus,pids`, plus ` unenforced=...` when some are not: appended to the
// audit row's limits.
std::string describe_enforcement(const Enforcement& enforcement);
// "podman cannot enforce the pids limit: WHY; FIX; or set limits.unenforced = accept ...".
std::string refusal_message(const EngineFacts& facts, const Enforcement& enforcement);

// The engine did not answer its `info`: its own error text, for describe_engine_error.
class EngineInfoError : public std::runtime_error {
 public:
  explicit EngineInfoError(const std::string& engine_output) : std::runtime_error(engine_output) {}
};

// Where the facts are cached, and for how long: anything that identifies the engine (client
// binary, daemon socket and pid file, user, boot) is part of the key, so a changed engine is
// asked again; the age limit covers what the key cannot see (a remote engine).
struct FactsCache {
  std::filesystem::path file;
  std::chrono::seconds local_ttl{3600};
  std::chrono::seconds remote_ttl{60};
};
FactsCache default_facts_cache();

// The key that must match for a cached verdict to apply to this engine.
std::string engine_identity(const Engine& engine);

// The engine's facts: from the cache when its key matches and it is fresh, else by asking the
// engine (and caching the answer). Throws EngineInfoError when the engine does not answer.
EngineFacts engine_facts(const Engine& engine, const FactsCache& cache);
// Asks the engine, bypassing the cache (`sandshim doctor`).
EngineFacts probe_engine_facts(const Engine& engine);

}  // namespace sandshim::shim
