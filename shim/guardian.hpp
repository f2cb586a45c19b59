#pragma once

#include <cstdint>
#include <functional>
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

  // The run is over but its container is not gone (a warm container): the guardian removes it
  // now, off the caller's path, retrying until the deadline, then exits.
  void remove_now();

 private:
  explicit Guardian(UniqueFd done) : m_done(std::move(done)) {}
  UniqueFd m_done;
};

// Runs `work` in a double-forked process in its own session, detached from the caller's
// terminal and fds (all but `keep_fd`), that nobody waits for: it outlives the shim.
void run_detached(const std::function<void()>& work, int keep_fd = -1);

// Forces removal of a container, retrying while it may still be being created: the shim's
// own deadline path and the guardian share it.
void force_remove_container(const Engine& engine, const std::string& name);

// Sends a signal to the container's init, which forwards it to the command.
bool signal_container(const Engine& engine, const std::string& name, const std::string& signal);

// In a warm container the command is not the init's child: the signal goes from inside, as
// the run's user, to every process it may signal there (never the init, which kill(-1) skips).
bool signal_exec_processes(const Engine& engine, const std::string& name, const std::string& user,
                           const std::string& signal);

}  // namespace sandshim::shim
