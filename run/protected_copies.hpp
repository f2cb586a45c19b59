#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

// A broker's run under sandbox.workspace = rw keeps the protected names (policy/reach.hpp: agent
// settings, hook files, .sandshim.conf; .git has its stage) read-only with copies of its own,
// never with binds of the caller's files. The engine mounts a bind at a name inside the caller's
// workspace, which the caller can swap for a link while it does, and the bind then lands wherever
// the link leads, over the gate too: a copy brings only the broker's files there, no links and
// nothing executable, so over the gate nothing runs (127), and where the gate runs it refuses the
// run (the name is not the copy).
class ProtectedCopies {
 public:
  // Copies of the protected names the held workspace has (a link followed beneath it; two names
  // of one file are copied once), in the broker's directory for this workspace and caller, which
  // warm containers hold binds on (the copies are refreshed in place); a run beside another of the
  // same workspace gets a directory of its own. Throws Fatal with one line when a name cannot be
  // copied: it leads out of the workspace, holds a file that is neither the caller's nor readable
  // by all, one the broker cannot read, or more than a copy takes.
  static std::unique_ptr<ProtectedCopies> make(int held_workspace,
                                               const std::filesystem::path& workspace, uid_t caller,
                                               const std::string& run_id);
  ProtectedCopies(const ProtectedCopies&) = delete;
  ProtectedCopies& operator=(const ProtectedCopies&) = delete;
  ~ProtectedCopies();  // release()

  // Lets the next run of the workspace have the shared directory (it stays for warm containers);
  // a run's own directory goes. Before the caller hears the outcome: its next command may come
  // at once. A run's own directory is locked while it lasts, and the next run that takes a
  // shared directory removes those whose run is over (a broker that died mid-run).
  void release();

  // Read-only, each at its name in the workspace.
  const std::vector<BindPath>& binds() const { return m_binds; }
  // TARGET, DEV:INO of its copy: what the gate checks.
  const std::vector<std::pair<std::filesystem::path, std::string>>& identities() const {
    return m_identities;
  }
  const std::filesystem::path& dir() const { return m_dir; }

 private:
  ProtectedCopies() = default;
  void refresh(int held_workspace, const std::filesystem::path& workspace, uid_t caller);

  std::filesystem::path m_dir;
  bool m_own = false;  // a run's own directory, removed after it
  UniqueFd m_lock;
  std::vector<BindPath> m_binds;
  std::vector<std::pair<std::filesystem::path, std::string>> m_identities;
};

// Where the copies live: the broker's ~/.local/state/sandshim/protected, reached by the engine
// alone.
std::filesystem::path protected_copies_root();

}  // namespace sandshim::shim
