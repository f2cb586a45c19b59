#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.hpp"

namespace sandshim::shim {

// The working directory of every engine client sandshim starts: its own, never the caller's
// (the workspace). podman's conmon creates a file `oom` in its working directory when the
// memory cap kills a container. Created on first use; no argument sandshim passes is relative.
std::filesystem::path engine_client_directory();

// How one engine call ended.
struct EngineReply {
  bool answered = false;  // false: the call timed out (the engine did not answer)
  int code = 0;
  std::string out;
  std::string err;
  bool ok() const { return answered && code == 0; }
};

// One container as `ps_by_label` lists it.
struct LabelledContainer {
  std::string name;
  std::string label_value;
};

// The containers a listing found; none when the engine failed (see reply).
struct ContainerList {
  EngineReply reply;
  std::vector<LabelledContainer> containers;
};

// The engine's verbs with names, over its CLI client: the run path, the pool, gc and the
// guardian call these instead of the client with literal formats and timeouts. Each call is
// logged at debug level with its duration. An Engine API implementation (engine/) can stand
// behind the same verbs.
class EngineClient {
 public:
  // How long a verb waits for the engine unless the caller says otherwise.
  static constexpr std::chrono::milliseconds k_default_timeout{30'000};

  explicit EngineClient(const Engine& engine) : m_engine(engine) {}

  // Starts a detached container (`run --detach …` as built by hardening).
  EngineReply create(const std::vector<std::string>& run_args,
                     std::chrono::milliseconds timeout = k_default_timeout) const;
  // Removes a container at once (kills it first); the engine's reply, for removal_confirmed.
  EngineReply remove(const std::string& container,
                     std::chrono::milliseconds timeout = k_default_timeout) const;
  // The engine's `info` as JSON (docker's {{json .}}, podman's json).
  EngineReply info(std::chrono::milliseconds timeout = k_default_timeout) const;
  // The image's id ("sha256:…") as the engine knows it; nullopt when it has no such image.
  std::optional<std::string> inspect_image(const std::string& image,
                                           std::chrono::milliseconds timeout) const;
  // The host pid of a running container's first process; nullopt when it does not run.
  std::optional<int64_t> container_pid(const std::string& container,
                                       std::chrono::milliseconds timeout) const;
  // Whether the engine reported an OOM kill of `container` between the two epoch seconds.
  bool oom_event(const std::string& container, int64_t since_s, int64_t until_s) const;
  // Containers (running or not) that carry `filter` ("LABEL" or "LABEL=VALUE"), each with the
  // value of `value_label` (empty when none is asked for).
  ContainerList ps_by_label(const std::string& filter, const std::string& value_label = "",
                            std::chrono::milliseconds timeout = k_default_timeout) const;

  // The client's argument lists of the verbs the run loop starts without waiting.
  std::vector<std::string> remove_argv(const std::string& container) const;

  const Engine& engine() const { return m_engine; }

 private:
  EngineReply call(const char* verb, std::vector<std::string> args,
                   std::chrono::milliseconds timeout) const;

  const Engine& m_engine;
};

}  // namespace sandshim::shim
