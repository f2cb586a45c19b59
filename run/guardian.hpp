#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "engine/engine.hpp"
#include "engine/reply.hpp"
#include "engine/transport.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// A detached process, in its own session, that removes the container if the shim dies (even by
// SIGKILL) and at the deadline at the latest. The shim releases it once the container is gone;
// when the engine stopped answering, the shim drops it unreleased and the guardian takes over.
// With `api_transport` (docker with engine.api = on) it removes through the Engine API, else with
// the engine's client.
class Guardian {
 public:
  static Guardian start(const Engine& engine, const std::string& container_name,
                        int64_t deadline_monotonic_ms,
                        std::optional<engine::Transport> api_transport = std::nullopt);
  Guardian(Guardian&&) = default;
  Guardian& operator=(Guardian&&) = default;
  ~Guardian();

  // The container is gone: the guardian exits without touching anything.
  void release();

  // The run is over but its container is not gone (a warm container): the guardian removes it
  // now, off the caller's path, retrying until the deadline, then exits.
  void remove_now();

  // The same once this process has exited (a second at most): the engine client of the removal
  // then no longer competes with the caller's last steps for the CPU.
  void remove_after_exit();

 private:
  explicit Guardian(UniqueFd done) : m_done(std::move(done)) {}
  UniqueFd m_done;
};

// Runs `work` in a double-forked process in its own session, detached from the caller's
// terminal and fds (all but `keep_fd`), that nobody waits for: it outlives the shim. The caller
// does not wait for the first fork either (it is reaped later, or by init).
void run_detached(const std::function<void()>& work, int keep_fd = -1);

// The same for background work that would compete with the caller's last steps for the CPU:
// `work` is given a function that waits until this process has exited (a second at most), and
// takes what it must hold from the start (a lock) before calling it.
void run_detached_after_exit(const std::function<void(const std::function<void()>&)>& work);

// Folds the audit WAL of `db` once it has grown large, in a detached process after this one has
// exited: the fold (a checkpoint and its fsyncs, 13-19 ms on this project's machine) stays off
// the caller's wait. The caller must have closed its own connection to `db`: SQLite's state must
// not cross the fork (the folder opens the file afresh).
void fold_audit_wal_after_exit(const std::filesystem::path& db);

// Writes through the store `open()` returns and closes it, then folds its WAL once this process
// has exited; returns what `write(store)` returned.
template <typename Open, typename Write>
auto write_then_fold(const Open& open, const Write& write) {
  std::filesystem::path db;
  auto written = [&] {
    auto store = open();
    db = store.path();
    return write(store);
  }();
  fold_audit_wal_after_exit(db);
  return written;
}

// How long a guardian keeps retrying, past the deadline, an engine that does not answer (stopped,
// paused, restarting) before it leaves the container to `sandshim gc`.
constexpr int64_t k_unanswered_patience_ms = 10 * 60 * 1000;

// Whether one `rm --force` attempt got the engine's word that the container is gone.
bool removal_confirmed(bool timed_out, int exit_code, const std::string& engine_stderr);
// The same for one API `remove`: removed now (204), or no such container (404).
bool removal_confirmed(const engine::Reply& reply);

// The guardian stops once the run has settled (deadline and grace passed) and the engine
// confirmed the removal, or when its patience with a silent engine is exhausted.
bool guardian_may_stop(int64_t now_ms, int64_t settled_ms, bool confirmed);

// The engine command that delivers a signal to a run: to the container's init, which forwards it
// to the command; in a warm container, where the command is not the init's child, from inside,
// as the run's user, to every process it may signal there (never the init, which kill(-1) skips).
std::vector<std::string> signal_arguments(const RunSpec& spec, const std::string& signal);

}  // namespace sandshim::shim
