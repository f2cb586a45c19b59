#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"
#include "shim/engine.hpp"

namespace sandshim::shim {

// Asks the engine for the image's id alongside the run, so the audit gets the digest without
// the run waiting for it. A local Docker engine is asked over its API socket (one request, no
// process: a second docker client costs ~20 ms of CPU per run); any other engine, or a socket
// that cannot be reached, through the client's `image inspect`.
class ImageProbe {
 public:
  ImageProbe(const Engine& engine, const std::string& image);
  ImageProbe(const ImageProbe&) = delete;
  ImageProbe& operator=(const ImageProbe&) = delete;
  ~ImageProbe();

  // The id, once the probe ends; empty when the engine did not know the image or did not
  // answer within `wait_ms` (a paused engine must not hold the shim).
  std::string result(int64_t wait_ms);

 private:
  void start_client(const Engine& engine, const std::string& image);

  EngineDialect m_dialect;
  pid_t m_pid = -1;   // the client's `image inspect`, while it runs
  UniqueFd m_socket;  // the API request, while its answer is unread
  UniqueFd m_out;
  bool m_done = false;
  std::string m_id;
};

// The Engine API socket to ask directly, for a local Docker engine only (the default socket, or
// a unix:// endpoint); nullopt for podman and remote endpoints, which go through the client.
std::optional<std::filesystem::path> engine_api_socket(const std::string& kind,
                                                       const std::string& endpoint);

// The HTTP/1.0 request for GET /images/{image}/json (HTTP/1.0: the engine closes when done).
std::string image_inspect_request(const std::string& image);

// The image id from the engine's HTTP answer; empty unless it is a 200 with an "Id".
std::string image_id_from_response(const std::string& response);

}  // namespace sandshim::shim
