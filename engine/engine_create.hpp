#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/io.hpp"
#include "engine/create_spec.hpp"
#include "engine/remote_workspace.hpp"

namespace sandshim::shim {

// One container as the Engine API creates it: the CreateSpec that `cli_arguments` gives the
// client, so the two paths cannot drift (both serialize the same spec).
struct CreateRequest {
  std::string name;
  std::string body;  // the JSON of POST /containers/create: Config with its HostConfig
  bool tty = false;
  bool auto_remove = false;  // --rm: the engine removes it once it exited
  bool interactive = false;  // --interactive: the caller's stdin reaches it
  bool libpod = false;       // podman: the body is libpod's SpecGenerator, not docker's Config,
                             // and the wait goes after start (engine_run.cpp)
  // A remote engine: the workspace travels (remote_workspace.hpp) instead of a bind mount.
  std::optional<ShippedWorkspace> shipped;
};

// The create request of a spec, or what of it has no API form here (the caller keeps the client).
struct ApiCreate {
  std::optional<CreateRequest> request;
  std::string unsupported;  // the field with no API form, as its client flag, and why
};

// Reads a file the spec names by path (a seccomp profile: docker's API takes its content).
using ReadFile = std::function<std::optional<std::string>(const std::string& path)>;

// What the API serializers need besides the spec: the client's environment as NAME=VALUE (a
// variable passed by name takes its value from there, as the client does) and a file reader
// (a real run's: the whole file, a seccomp profile being tens of kilobytes).
struct CreateInputs {
  std::vector<std::string> client_env;
  ReadFile read_file = [](const std::string& path) {
    return read_file_text(path, {.max_bytes = size_t{16} << 20});
  };
};

// docker's create body (Config with its HostConfig) for `spec`.
ApiCreate docker_create(const CreateSpec& spec, const CreateInputs& inputs);

// podman's: the body of libpod's create (its SpecGenerator), which carries what the compat
// create drops (--read-only-tmpfs=false, the init's path, --cgroups=enabled, a bind's noexec).
ApiCreate podman_create(const CreateSpec& spec, const CreateInputs& inputs);

// The create of `spec` in the engine's dialect: podman's (libpod) or docker's.
ApiCreate api_create(const CreateSpec& spec, bool podman, const CreateInputs& inputs);

}  // namespace sandshim::shim
