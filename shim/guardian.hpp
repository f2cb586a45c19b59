#pragma once

#include <cstdint>
#include <string>

#include "common/unique_fd.hpp"
#include "shim/engine.hpp"

namespace sandshim::shim {

// A detached process, in its own session, that removes the container if the shim dies (even by
// SIGKILL) and at the deadline at the latest. The shim releases it once the container is gone.
class Guardian {
 public:
  static Guardian start(const Engine& engine, const std::string& container_name,
                        int64_t deadline_monotonic_ms);
  Guardian(Guardian&&) = default;
  Guardian& operator=(Guardian&&) = default;
  ~Guardian();

  // The container is gone: the guardian exits without touching anything.
  void release();

 private:
  explicit Guardian(UniqueFd done) : m_done(std::move(done)) {}
  UniqueFd m_done;
};

// Forces removal of a container, retrying while it may still be being created: the shim's
// own deadline path and the guardian share it.
void force_remove_container(const Engine& engine, const std::string& name);

// Sends a signal to the container's init, which forwards it to the command.
bool signal_container(const Engine& engine, const std::string& name, const std::string& signal);

}  // namespace sandshim::shim
