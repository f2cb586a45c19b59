#pragma once

#include <sys/types.h>

#include <string>

#include "engine/api_client.hpp"
#include "engine/engine_create.hpp"
#include "engine/engine_fault.hpp"

namespace sandshim::shim {

// Where the API client's run reads and writes: the caller's stdin, and the caller's terminal or
// the run loop's two relay pipes; `report` receives an ApiFault when the run fails for the
// engine's sake (-1: none), `cidfile` the container's id (empty: none).
struct ApiRunIo {
  int in = 0;
  int out = 1;
  int err = 2;
  int report = -1;
  std::string cidfile;
};

// Starts a forked client that runs `request` over the Engine API as `docker run` would: create,
// attach (before start: nothing is lost), wait (sent before start: an AutoRemove container
// cannot end unseen), start, then the container's stdin, stdout and stderr byte for byte, and
// exits with the container's status or with the client's own codes (125 engine, 126 cannot
// execute, 127 not found), the engine's part of a failure typed on `io.report`, never on stderr
// (which is the container's alone). The run loop treats it as it treats the client: it stays in
// charge of the deadline, signals and OOM.
pid_t start_api_client(const engine::ApiClient& api, const CreateRequest& request,
                       const ApiRunIo& io);

// The exit code `docker run` gives when the engine refused to start the container: 127 for a
// program that is not there, 126 for one that cannot be executed, else 125.
int start_failure_code(const std::string& engine_message);

}  // namespace sandshim::shim
