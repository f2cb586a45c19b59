#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

// sandbox.workspace = rw in a git workspace: git's own writes (commits, branches, the index,
// a stash) reach the host, while what steers git on the host (config, hooks, a commondir, a
// rebase's todo) never does. The run sees a staged .git: a directory of its own holding copies
// of .git's top-level files, with objects, refs and logs bound writable from the host and every
// other directory of .git read-only (through a broker: bound at k_git_dirs_target, and linked
// from the stage). After the run only git's state files (HEAD, the index…)
// are carried back, each checked and written the way git writes it (NAME.lock, then a rename),
// and only when the host's copy did not change meanwhile; anything else the run changed there
// stays behind, named. In the directories written in place, a symlink or fifo the run left (which
// git on the host would append a reflog line through, or block on) is removed, named.
struct GitCarry {
  std::vector<std::string> carried;      // HEAD, index… written to the host's .git
  std::vector<std::string> kept;         // the host's own copy changed meanwhile, or is locked
  std::vector<std::string> left_behind;  // not git's state, or not in its shape
  std::vector<std::string> removed;      // links and fifos the run left in objects, refs, logs
};

// A broker's run hands the caller's client what the run changed of git's state, since the
// broker's user must not write the caller's .git: the client carries it as the caller, as direct
// mode does (carry_handed).
struct HandedGitFile {
  std::string name;       // one of git's state files (GitStage::is_carried)
  std::string host_mark;  // the host's copy as the stage was filled (mark_text; "" when absent)
  UniqueFd content;       // the run's file, read-only; invalid when the run removed it
};
struct HandedGit {
  std::filesystem::path workspace;
  std::string git_id;  // DEV:INO of the .git the stage was filled from
  std::vector<HandedGitFile> files;
  std::vector<std::string> left_behind;  // changed in the stage, not git's state
  bool empty() const { return files.empty() && left_behind.empty(); }
};

// Where a broker's run has .git's directories (the stage links to them): a place in the
// image's root, which no link of the caller's can move.
inline constexpr const char* k_git_dirs_target = "/.sandshim/git";

class GitStage {
 public:
  // Null when there is nothing to stage (no .git directory) or another run holds this
  // workspace's stage: the run then keeps .git read-only. Throws nothing.
  static std::unique_ptr<GitStage> open(const std::filesystem::path& workspace, uid_t uid,
                                        gid_t gid);
  // A broker's: the stage is the broker's own (its state directory, which no one else can
  // reach), filled from the caller's .git beneath the held workspace, so nothing in it is the
  // caller's when the engine mounts it; a link at WORKSPACE/.git then moves only the broker's
  // copies, and the gate checks the stage is what the container has at .git. Only files owned by
  // `caller` with one link are copied (else no stage). Null as `open`.
  static std::unique_ptr<GitStage> open_for_broker(int held_workspace,
                                                   const std::filesystem::path& workspace,
                                                   uid_t caller);
  GitStage(const GitStage&) = delete;
  GitStage& operator=(const GitStage&) = delete;
  ~GitStage();  // empties the stage and lets the next run have it

  // The stage at WORKSPACE/.git, then .git's directories over it.
  const std::vector<BindPath>& binds() const { return m_binds; }
  // git inside trusts the workspace and knows the caller's name and e-mail (their global git
  // config), as git on the host does.
  std::vector<std::pair<std::string, std::string>> environment(
      const std::vector<std::pair<std::string, std::string>>& identity) const;
  // After the run: carries git's state files back to the host's .git; what it finds then is
  // the baseline of the next carry (a warm attempt that ran nothing, then the cold run).
  GitCarry carry_back();
  // A broker's: what the run changed, for the caller's client to carry (nothing is written to
  // the caller's .git here).
  HandedGit hand_back();
  // Empties the stage and lets the next run have it, before the caller hears the outcome (a
  // broker's worker has work left after that, and the caller's next command may come at once).
  // `container_may_live`: the run ended by its deadline, a signal or an engine's failure, so its
  // container may still run (an engine that hangs removing it); a broker's stage is then set
  // aside, and the next run gets a new one that no container of the caller's holds.
  void release(bool container_may_live = false);
  // The stage's directory on the host and its DEV:INO, which the gate checks at WORKSPACE/.git.
  const std::filesystem::path& dir() const { return m_dir; }
  // A broker's stage: the group (the broker's own) that alone may write it besides the broker;
  // the run's processes get it, the caller's processes on the host never have it.
  std::optional<gid_t> group() const { return m_group; }
  const std::string& identity() const { return m_identity; }

  // The files carried back, and whether TEXT has the shape git gives NAME (a ref or object ids
  // for *_HEAD, "DIRC" for the index…); exposed for the unit tests.
  static bool is_carried(const std::string& name);
  static bool has_git_shape(const std::string& name, const std::string& head_bytes);

  // What a file looked like: a change replaces, grows or touches it.
  struct FileMark {
    bool exists = false;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileMark&) const = default;
  };

 private:
  GitStage() = default;
  void fill(uid_t uid, gid_t gid);
  void link_to_fixed_place(const std::string& name);
  void empty_stage();
  void set_aside() const;  // a broker's: renamed away, so the next run makes a new one
  void take_host_marks();
  void take_stage_marks();
  // The names the run changed at the stage's top (made, replaced or removed), as they are now.
  std::vector<std::pair<std::string, FileMark>> changed_names() const;

  bool m_broker = false;
  std::optional<gid_t> m_group;
  uid_t m_caller = 0;  // a broker's: whose .git this is
  std::string m_identity;
  std::string m_git_id;
  std::filesystem::path m_workspace;
  int64_t m_opened_s = 0;       // when the stage was filled: the run's changes come after
  std::filesystem::path m_dir;  // the stage on the host
  UniqueFd m_lock;
  UniqueFd m_git;                                 // the host's .git
  UniqueFd m_stage;                               // m_dir
  std::vector<std::string> m_subdirs;             // .git's directories, bound over the stage
  std::map<std::string, FileMark> m_host_marks;   // carried names as the host had them
  std::map<std::string, FileMark> m_stage_marks;  // every copied file as the stage had it
  std::vector<BindPath> m_binds;
};

// Where the stages live: ~/.local/state/sandshim/git-stage (`sandshim gc` removes the stages of
// workspaces that are gone).
std::filesystem::path git_stage_root();

// The caller's user.name and user.email from their global git config (the XDG file, then
// ~/.gitconfig, which wins), as git on the host finds them; includes are not followed. Read in
// the caller's process: through a broker the client sends them as data.
std::vector<std::pair<std::string, std::string>> global_git_identity(
    const std::filesystem::path& home);

// A broker's account of a stage handed back, for its audit row.
std::string describe_handed(const HandedGit& handed);

// A file's mark as text ("" when absent): what a broker hands its client.
std::string mark_text(const GitStage::FileMark& mark);

// The client's half of a broker's stage, as the caller: the run's files to WORKSPACE/.git as
// direct mode carries them, when that .git is still the one the broker filled the stage from and
// each file is as the host had it then; links and fifos the run left where it wrote in place
// (since `since_s`) are removed.
GitCarry carry_handed(const HandedGit& handed, int64_t since_s);

// A one-line account of a carry for the audit and, when something was not carried, the caller.
std::string describe_carry(const GitCarry& carry);

}  // namespace sandshim::shim
