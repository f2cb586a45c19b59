#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/unique_fd.hpp"
#include "engine/api_client.hpp"
#include "engine/engine.hpp"

namespace sandshim::shim {

// Asks the engine for the image's id alongside the run, so the audit gets the digest without
// the run waiting for it. An engine with a local API socket (docker's, podman's service) is
// asked through the engine library (one request, no process: a second client costs ~20 ms of
// CPU per run); a remote engine, or a socket nobody answers on, through the client's
// `image inspect`.
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
  std::string client_result(int64_t wait_ms);

  EngineDialect m_dialect;
  engine::PendingReply m_request;  // the API request, while its answer is unread
  pid_t m_pid = -1;                // the client's `image inspect`, while it runs
  UniqueFd m_out;
  bool m_done = false;
  std::string m_id;
};

}  // namespace sandshim::shim
