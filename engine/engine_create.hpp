#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/remote_workspace.hpp"

namespace sandshim::shim {

// One container as the Engine API creates it: the same container `docker run` with these
// arguments creates, so the two paths cannot drift (both start from build_run_arguments).
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

// A translation, or the flag it could not carry (the caller then keeps the client).
struct CreateTranslation {
  std::optional<CreateRequest> request;
  std::string unsupported;  // the first argument with no API equivalent here
};

// Reads a file the arguments name by path (a seccomp profile: the API takes its content).
using ReadFile = std::function<std::optional<std::string>(const std::string& path)>;

// The ReadFile of a real run: the file's whole content, or none when it cannot be read.
std::optional<std::string> read_named_file(const std::string& path);

// Turns a `run` argument list (docker's dialect, as build_run_arguments makes it) into the create
// request. `client_env` is the client's environment as NAME=VALUE: a bare `--env=NAME` takes its
// value from there, as the client does. Any flag not in the table leaves the run to the client.
CreateTranslation translate_run_arguments(const std::vector<std::string>& args,
                                          const std::vector<std::string>& client_env,
                                          const ReadFile& read_file);

// The same for podman's `run` arguments (its dialect: --init-path, --read-only-tmpfs=false,
// --cgroups=enabled, --unsetenv): the body of libpod's create, which carries each of them (the
// compat create cannot). Any flag not in podman's table leaves the run to the client.
CreateTranslation translate_podman_run_arguments(const std::vector<std::string>& args,
                                                 const std::vector<std::string>& client_env,
                                                 const ReadFile& read_file);

// The fields of one `--mount` value (CSV, as the client splits it: quotes, doubled quotes).
std::vector<std::string> split_csv_fields(const std::string& value);

}  // namespace sandshim::shim
