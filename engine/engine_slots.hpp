#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/unique_fd.hpp"

namespace sandshim::engine {

// An engine's directory of placement files under $XDG_STATE_HOME/sandshim/engines: slot-N files,
// each flock'd by a run in flight on that engine (the kernel drops the lock when the run's
// process ends, even by SIGKILL), and `down`, whose time is the engine's last failed ping.
class EngineSlots {
 public:
  EngineSlots(const std::filesystem::path& root, const std::string& endpoint);

  // Runs in flight: slot files some process holds.
  int64_t load() const;
  // A slot held until the descriptor closes; invalid when `cap` (0: none) are all held.
  UniqueFd take(int64_t cap) const;
  // Whether the engine failed a ping less than `retry_ms` ago.
  bool down(int64_t retry_ms) const;
  void mark_down() const;
  void mark_up() const;

  const std::filesystem::path& dir() const { return m_dir; }

 private:
  std::filesystem::path m_dir;
};

// $XDG_STATE_HOME/sandshim/engines.
std::filesystem::path engine_slots_root();

}  // namespace sandshim::engine
