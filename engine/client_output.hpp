#pragma once

#include <string>

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

// The one line for that case, from the client's own error.
std::string describe_lost_engine(const std::string& engine_output);

}  // namespace sandshim::shim
