#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "engine/create_spec.hpp"
#include "policy/policy.hpp"

namespace sandshim::shim {

// Everything that differs between the docker and podman clients, in one place: hardening, the
// run loop, the guardian, gc and the image probe ask this instead of testing the engine's name.
struct EngineDialect {
  std::string kind = "docker";  // docker | podman
  // podman only: the init bind-mounted as PID 1. tini-static (docker's own init) keeps exit codes
  // 126/127 as docker's; empty: podman's catatonit, which exits 1 when the command cannot start.
  std::string init_path;

  bool is_podman() const { return kind == "podman"; }
  // Adds to a container's spec what this engine needs on top of the common hardening to give
  // the same sandbox as docker's (podman: its init's path, no writable tmpfs on a read-only
  // root, cgroups on, no TERM the caller did not pass).
  void complete(CreateSpec& spec) const;
  // `ps --format` of one label's value; `events --format` of the event's name.
  std::string label_format(const std::string& label) const;
  std::string event_format() const;
  // `rm` that kills at once: podman's `rm --force` first waits up to 10 s on SIGTERM, which a
  // program that ignores it spends running past its deadline.
  std::vector<std::string> remove_arguments(const std::string& name) const;
  // The image id as docker prints it ("sha256:HEX"), whatever the engine printed.
  std::string normalize_image_id(const std::string& id) const;
  // The fixes named in one-line engine errors.
  std::string info_command() const;
  std::string start_hint() const;
  std::string permission_hint() const;
};

// The dialect of `kind`; podman's init is looked up on `search_path`.
EngineDialect make_dialect(const std::string& kind, const std::string& search_path);

// engine.name resolved to a client: `auto` is docker when `docker` is found on `search_path`,
// else podman; with an explicit engine.path, the client's file name decides.
std::string resolve_engine_kind(
    const std::string& name, const std::string& engine_path, const std::string& search_path,
    const std::function<bool(const std::filesystem::path&)>& skip = [](const auto&) {
      return false;
    });

// The container engine client, found and configured so that nothing from the caller steers
// it: an absolute path, and an environment built from the policy alone.
struct Engine {
  std::string kind;              // docker | podman
  std::filesystem::path client;  // absolute path of the client binary
  std::vector<std::string> env;  // the client's complete environment
  std::string endpoint;          // empty: local
  EngineDialect dialect;
  std::string tls_cert_path = {};  // tcp://: ca.pem, cert.pem, key.pem (engine.tls_cert_path)

  std::string ssh_identity = {};     // ssh://: engine.ssh_identity
  std::string ssh_known_hosts = {};  // ssh://: engine.ssh_known_hosts
  // engine.endpoints: the placement slot this run holds on the engine while any copy lives.
  std::shared_ptr<const UniqueFd> slot = {};

  // "docker", or "docker@ssh://host" for a remote engine, for records and messages.
  std::string describe() const;
  // The client's command line that removes a container at once (the dialect's `rm`).
  std::vector<std::string> remove_command(const std::string& name) const;
  // The client's environment plus variables whose values reach the container through `-e NAME`,
  // so values never appear in the process list.
  std::vector<std::string> env_with(
      const std::vector<std::pair<std::string, std::string>>& passed) const;
};

// Finds the engine client on the policy's search path, never sandshim itself or its shim
// directory. Throws Fatal (exit 125) with the fix when there is none.
Engine locate_engine(const Policy& policy);

// The fixed environment of the engine client of `kind` (docker | podman) for this policy.
std::vector<std::string> engine_environment(const Policy& policy, const std::string& kind);
std::vector<std::string> engine_environment(const Policy& policy);

// The engine client's own configuration directory: empty, so a user's `proxies` or
// credential helpers in ~/.docker/config.json never inject anything into a sandbox.
std::filesystem::path engine_config_dir();

}  // namespace sandshim::shim
