#pragma once

#include <span>
#include <string>
#include <string_view>

#include "engine/engine_fault.hpp"

namespace sandshim::shim {

// What the engine client (docker or podman run) prints on stderr, read in this one place: the
// run loop holds such lines back and decides from them. The API path's errors are typed.

// The client's own error lines, held back briefly so that, when the engine fails, the user sees
// one clear line from sandshim instead of the engine's usage noise.
bool starts_like_engine_error(const std::string& text);

// The client's own line when its connection to the engine broke after the container started:
// `time="…" level=error msg="error waiting for container: unexpected EOF"`.
bool starts_like_engine_lost(const std::string& text);

// Whether the engine client's last output says it lost the engine after the container started
// (the daemon died or restarted mid-run): the container may outlive the client.
bool reports_engine_lost(const std::string& engine_output);

// The one line for that case, from the client's own error (describe_engine_lost).
std::string describe_lost_engine(const std::string& engine_output);

// The client's answer to a removal of a container that is already gone (podman names it; docker
// answers 0).
bool reports_container_gone(const std::string& engine_stderr);

// `Error response from daemon: No such container: NAME`, for exactly this container.
bool reports_no_such_container(const std::string& engine_stderr, const std::string& name);

// The engine's socket refused this uid (the client then exits 126).
bool reports_socket_refused(const std::string& engine_stderr);

// `docker exec`'s runtime error for a program missing from the image (it exits 126, where
// `docker run` exits 127), printed on stdout or stderr.
bool reports_exec_not_found(const std::string& engine_output);

// One line an engine client prints, and what it means. The fix for each kind is the engine's
// own (engine_error_fix), from its dialect.
struct EngineErrorPattern {
  std::string_view text;  // a substring of the client's error line
  EngineErrorKind kind;
  std::string_view engine;  // the client that prints it (docker, podman); both match it
};

// The table of engine error lines sandshim recognises, in the order they are tried.
std::span<const EngineErrorPattern> engine_error_patterns();

// The kind of the engine's error line `reason` (first matching row of the table).
EngineErrorKind classify_engine_error(const std::string& reason);

// The engine's first error line that is not one of podman's log lines (`time="…" level=…`),
// without the client's `docker: ` or `Error: ` prefix.
std::string engine_error_reason(const std::string& engine_output);

}  // namespace sandshim::shim
