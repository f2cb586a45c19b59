#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>

#include "run/git_stage.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::shim;
using sandshim::testing::EnvOverride;
using sandshim::testing::read_text;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

namespace {

const std::string k_id = std::string(40, 'a');
const std::string k_other_id = std::string(40, 'b');
const std::string k_index = std::string("DIRC\0\0\0\2", 8);  // an index's signature and version

// A .git as git leaves it after a first commit (the files sandshim reads, not git's formats).
void make_git_dir(const fs::path& workspace) {
  fs::path git = workspace / ".git";
  write_text(git / "HEAD", "ref: refs/heads/main\n");
  write_text(git / "config", "[core]\n\trepositoryformatversion = 0\n");
  write_text(git / "index", k_index);
  write_text(git / "refs" / "heads" / "main", k_id + "\n");
  write_text(git / "hooks" / "pre-commit.sample", "#!/bin/sh\n");
  fs::create_directories(git / "objects");
}

// What a run does to a file: git writes a new one and renames it over the old.
void replace(const fs::path& file, const std::string& text) {
  write_text(file.string() + ".new", text);
  fs::rename(file.string() + ".new", file);
}

struct Staged {
  TempDir dir;
  fs::path workspace = dir.path() / "ws";
  EnvOverride state{{"XDG_STATE_HOME", (dir.path() / "state").string()}};
  std::unique_ptr<GitStage> stage;
  fs::path stage_dir;

  Staged() {
    make_git_dir(workspace);
    stage = GitStage::open(workspace, ::getuid(), ::getgid());
    REQUIRE(stage);
    stage_dir = stage->binds().front().source;
  }
};

}  // namespace

TEST_CASE("git stage: a file has git's shape or is not carried") {
  CHECK(GitStage::has_git_shape("HEAD", "ref: refs/heads/main\n"));
  CHECK(GitStage::has_git_shape("HEAD", k_id + "\n"));
  CHECK(GitStage::has_git_shape("HEAD", std::string(64, 'c')));
  CHECK_FALSE(GitStage::has_git_shape("HEAD", "ref: refs/heads/../../config\n"));
  CHECK_FALSE(GitStage::has_git_shape("HEAD", "ref: /etc/passwd\n"));
  CHECK_FALSE(GitStage::has_git_shape("HEAD", "ref: refs/heads/a b\n"));
  CHECK_FALSE(GitStage::has_git_shape("HEAD", "root:x:0:0:root:/root:/bin/bash\n"));
  CHECK(GitStage::has_git_shape("ORIG_HEAD", k_id + "\n"));
  CHECK(GitStage::has_git_shape("MERGE_HEAD", k_id + "\n" + k_other_id + "\n"));
  CHECK_FALSE(GitStage::has_git_shape("ORIG_HEAD", "ref: refs/heads/main\n"));
  CHECK_FALSE(GitStage::has_git_shape("ORIG_HEAD", ""));
  CHECK(GitStage::has_git_shape("FETCH_HEAD", k_id + "\t\tbranch 'main' of /src\n"));
  CHECK_FALSE(GitStage::has_git_shape("FETCH_HEAD", "exec rm -rf /\n"));
  CHECK(GitStage::has_git_shape("index", k_index));
  CHECK_FALSE(GitStage::has_git_shape("index", "[core]\n"));
  CHECK(GitStage::has_git_shape(
      "packed-refs", "# pack-refs with: peeled\n" + k_id + " refs/tags/v1\n^" + k_other_id + "\n"));
  CHECK_FALSE(GitStage::has_git_shape("packed-refs", "[core]\n\tfsmonitor = x\n"));
  CHECK(GitStage::has_git_shape("COMMIT_EDITMSG", "any text\n"));
  CHECK_FALSE(GitStage::has_git_shape("HEAD", k_id + std::string(70 * 1024, '\n')));
}

TEST_CASE("git stage: only git's state is carried, never what steers git") {
  for (const char* name : {"HEAD", "index", "ORIG_HEAD", "packed-refs", "COMMIT_EDITMSG"}) {
    CHECK(GitStage::is_carried(name));
  }
  for (const char* name : {"config", "commondir", "config.worktree", "description", "shallow",
                           "HEAD.lock", "hooks", "rebase-merge", "sequencer"}) {
    CHECK_FALSE(GitStage::is_carried(name));
  }
}

TEST_CASE(
    "git stage: the run sees copies; objects, refs and logs writable, other directories not") {
  Staged s;
  const auto& binds = s.stage->binds();
  REQUIRE(binds.size() == 4);  // the stage, then hooks, objects, refs (in .git's order)
  CHECK(binds.front().target == s.workspace / ".git");
  CHECK_FALSE(binds.front().read_only);
  for (const auto& bind : binds) {
    if (bind.target.filename() == "hooks") {
      CHECK(bind.read_only);
    } else if (bind.target != s.workspace / ".git") {
      CHECK_FALSE(bind.read_only);
      CHECK(bind.source == bind.target);  // the host's own directory
    }
  }
  CHECK(read_text(s.stage_dir / "HEAD") == "ref: refs/heads/main\n");
  CHECK(fs::is_directory(s.stage_dir / "objects"));
  CHECK(fs::is_empty(s.stage_dir / "hooks"));  // a mount point only
  CHECK(fs::is_symlink(s.stage_dir / "HEAD") == false);
}

TEST_CASE("git stage: git's state comes back, what steers git stays behind, named") {
  Staged s;
  fs::path git = s.workspace / ".git";
  replace(s.stage_dir / "HEAD", "ref: refs/heads/topic\n");
  replace(s.stage_dir / "index", k_index + " changed");
  replace(s.stage_dir / "config", "[core]\n\tfsmonitor = touch /tmp/pwned\n");
  write_text(s.stage_dir / "commondir", "../evil\n");
  fs::create_symlink("/etc/passwd", s.stage_dir / "ORIG_HEAD");
  write_text(s.stage_dir / "MERGE_HEAD", "ref: refs/heads/main\n");

  GitCarry carry = s.stage->carry_back();
  CHECK(carry.carried == std::vector<std::string>{"HEAD", "index"});
  CHECK(carry.kept.empty());
  CHECK(carry.left_behind == std::vector<std::string>{"MERGE_HEAD (not in git's shape)",
                                                      "ORIG_HEAD (not in git's shape)", "commondir",
                                                      "config"});
  CHECK(read_text(git / "HEAD") == "ref: refs/heads/topic\n");
  CHECK(read_text(git / "config") == "[core]\n\trepositoryformatversion = 0\n");
  CHECK_FALSE(fs::exists(fs::symlink_status(git / "commondir")));
  CHECK_FALSE(fs::exists(fs::symlink_status(git / "ORIG_HEAD")));
  CHECK_FALSE(fs::exists(git / "HEAD.lock"));
  CHECK(describe_carry(carry) ==
        "git: carried to the host's .git: HEAD, index; left in the sandbox (such files steer git "
        "on the host): .git/MERGE_HEAD (not in git's shape), .git/ORIG_HEAD (not in git's "
        "shape), .git/commondir, .git/config");

  SECTION("a second carry starts from what the first found") {
    replace(s.stage_dir / "HEAD", k_id + "\n");
    GitCarry again = s.stage->carry_back();
    CHECK(again.carried == std::vector<std::string>{"HEAD"});
    CHECK(again.left_behind.empty());
    CHECK(read_text(git / "HEAD") == k_id + "\n");
  }
}

TEST_CASE("git stage: the host's own change or lock wins, and a removal is carried") {
  Staged s;
  fs::path git = s.workspace / ".git";
  write_text(git / "ORIG_HEAD", k_id + "\n");  // appears on the host after the stage was filled
  replace(s.stage_dir / "HEAD", "ref: refs/heads/topic\n");
  replace(git / "HEAD", "ref: refs/heads/elsewhere\n");
  replace(s.stage_dir / "index", k_index + " changed");
  write_text(git / "index.lock", "");
  write_text(s.stage_dir / "ORIG_HEAD", k_other_id + "\n");
  fs::remove(s.stage_dir / "config");  // not carried either way

  GitCarry carry = s.stage->carry_back();
  CHECK(carry.carried.empty());
  CHECK(carry.kept == std::vector<std::string>{"HEAD (changed on the host meanwhile)",
                                               "ORIG_HEAD (changed on the host meanwhile)",
                                               "index (git holds index.lock on the host)"});
  CHECK(read_text(git / "HEAD") == "ref: refs/heads/elsewhere\n");
  CHECK(read_text(git / "index") == k_index);
  CHECK(fs::exists(git / "config"));

  fs::remove(git / "index.lock");
  write_text(git / "MERGE_HEAD", k_id + "\n");
  s.stage.reset();
  s.stage = GitStage::open(s.workspace, ::getuid(), ::getgid());
  REQUIRE(s.stage);
  fs::remove(s.stage_dir / "MERGE_HEAD");
  CHECK(s.stage->carry_back().carried == std::vector<std::string>{"MERGE_HEAD (removed)"});
  CHECK_FALSE(fs::exists(git / "MERGE_HEAD"));
}

TEST_CASE("git stage: a link or fifo the run left where git appends is removed, named") {
  Staged s;
  fs::path git = s.workspace / ".git";
  fs::create_directories(git / "logs" / "refs" / "heads");
  fs::path secret = s.dir.path() / "bashrc";
  write_text(secret, "# mine\n");
  fs::create_symlink(secret, git / "logs" / "HEAD");
  REQUIRE(::mkfifo((git / "refs" / "heads" / "blocked").c_str(), 0600) == 0);
  fs::create_symlink(secret, git / "objects" / "ab");
  write_text(git / "logs" / "refs" / "heads" / "main", k_id + " " + k_other_id + " dev\n");
  fs::create_directories(git / "objects" / "cd");
  fs::create_symlink(secret, git / "objects" / "cd" / "ef");  // a loose object leading elsewhere

  GitCarry carry = s.stage->carry_back();
  std::sort(carry.removed.begin(), carry.removed.end());
  CHECK(carry.removed ==
        std::vector<std::string>{"logs/HEAD", "objects/ab", "objects/cd/ef", "refs/heads/blocked"});
  CHECK(fs::is_regular_file(git / "logs" / "refs" / "heads" / "main"));
  CHECK(read_text(secret) == "# mine\n");
  CHECK(describe_carry(carry).find("removed from the host's .git (a link or fifo git would write "
                                   "through): ") != std::string::npos);
}

TEST_CASE("git stage: one run at a time; the copies go when it ends") {
  Staged s;
  CHECK(GitStage::open(s.workspace, ::getuid(), ::getgid()) == nullptr);  // held: .git stays ro
  CHECK(fs::exists(s.stage_dir / "HEAD"));
  s.stage.reset();
  CHECK_FALSE(fs::exists(s.stage_dir / "HEAD"));
  CHECK(fs::is_directory(s.stage_dir / "objects"));  // a warm container's mount point stays
  CHECK(GitStage::open(s.workspace, ::getuid(), ::getgid()) != nullptr);
}

TEST_CASE("git stage: nothing to stage without a .git directory") {
  TempDir dir;
  EnvOverride state{{"XDG_STATE_HOME", (dir.path() / "state").string()}};
  fs::create_directories(dir.path() / "ws");
  CHECK(GitStage::open(dir.path() / "ws", ::getuid(), ::getgid()) == nullptr);
  write_text(dir.path() / "ws" / ".git", "gitdir: /elsewhere\n");  // a linked worktree
  CHECK(GitStage::open(dir.path() / "ws", ::getuid(), ::getgid()) == nullptr);
}

TEST_CASE("git stage: git inside trusts the workspace and knows the caller's global identity") {
  TempDir dir;
  EnvOverride env{{"XDG_STATE_HOME", (dir.path() / "state").string()},
                  {"XDG_CONFIG_HOME", (dir.path() / "xdg").string()}};
  fs::path workspace = dir.path() / "ws";
  make_git_dir(workspace);
  fs::path home = dir.path() / "home";
  write_text(dir.path() / "xdg" / "git" / "config", "[user]\n\temail = old@example.com\n");
  write_text(home / ".gitconfig",
             "[core]\n\tname = not-this\n[User]\n\tName = \"Dev One\"\n\temail = dev@example.com "
             "# work\n[user \"x\"]\n");
  auto stage = GitStage::open(workspace, ::getuid(), ::getgid());
  REQUIRE(stage);
  using Env = std::vector<std::pair<std::string, std::string>>;
  CHECK(stage->environment(global_git_identity(home)) ==
        Env{{"GIT_CONFIG_COUNT", "3"},
            {"GIT_CONFIG_KEY_0", "safe.directory"},
            {"GIT_CONFIG_VALUE_0", workspace.string()},
            {"GIT_CONFIG_KEY_1", "user.email"},
            {"GIT_CONFIG_VALUE_1", "dev@example.com"},
            {"GIT_CONFIG_KEY_2", "user.name"},
            {"GIT_CONFIG_VALUE_2", "Dev One"}});
}

TEST_CASE("git stage: a .git with a linked directory is not staged (it stays read-only)") {
  TempDir dir;
  EnvOverride state{{"XDG_STATE_HOME", (dir.path() / "state").string()}};
  fs::path workspace = dir.path() / "ws";
  make_git_dir(workspace);
  fs::create_directories(workspace / ".githooks");
  fs::remove_all(workspace / ".git" / "hooks");
  fs::create_directory_symlink("../.githooks", workspace / ".git" / "hooks");
  CHECK(GitStage::open(workspace, ::getuid(), ::getgid()) == nullptr);
}

namespace {

// A broker's stage of `workspace`, filled beneath it as the worker does (held by descriptor).
std::unique_ptr<GitStage> broker_stage(const fs::path& workspace) {
  sandshim::UniqueFd held(::open(workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(held.valid());
  return GitStage::open_for_broker(held.get(), workspace, ::getuid());
}

// A workspace with a .git, and the broker's state directory, both under a temporary directory.
struct BrokerWorkspace {
  TempDir dir;
  EnvOverride state{{"XDG_STATE_HOME", (dir.path() / "state").string()}};
  fs::path workspace = dir.path() / "ws";
  BrokerWorkspace() { make_git_dir(workspace); }
};

std::vector<std::string> handed_names(const HandedGit& handed) {
  std::vector<std::string> names;
  for (const auto& file : handed.files) {
    names.push_back(file.name + (file.content.valid() ? "" : " (removed)"));
  }
  return names;
}

}  // namespace

TEST_CASE(
    "git stage, a broker's: its own directory, its group's to write, none of the caller's "
    "files") {
  BrokerWorkspace ws;
  const fs::path& workspace = ws.workspace;
  auto stage = broker_stage(workspace);
  REQUIRE(stage);
  struct stat st {};
  REQUIRE(::stat(git_stage_root().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);  // no one but the broker (and the engine) reaches a stage
  REQUIRE(::stat(stage->dir().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0770);  // the run's processes have the broker's group; the
  CHECK(st.st_gid == ::getegid());     // caller's processes on the host do not
  CHECK(stage->group() == std::optional<gid_t>(::getegid()));
  CHECK(stage->identity() == std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino));
  REQUIRE(::lstat((stage->dir() / "HEAD").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);  // git rewrites COMMIT_EDITMSG and FETCH_HEAD in place
  CHECK(read_text(stage->dir() / "HEAD") == "ref: refs/heads/main\n");
  CHECK(stage->binds().front().source == stage->dir());
  CHECK(stage->binds().front().target == workspace / ".git");
}

TEST_CASE(
    "git stage, a broker's: .git's directories bind at a fixed place the stage links to; only "
    "git's own names") {
  BrokerWorkspace ws;
  const fs::path& workspace = ws.workspace;
  fs::create_directories(workspace / ".git" / "gate");  // no name of git's: not shown
  for (int round = 0; round < 2; ++round) {             // a second run finds the links of the first
    auto stage = broker_stage(workspace);
    REQUIRE(stage);
    std::vector<std::string> targets;
    for (const BindPath& bind : stage->binds()) {
      if (bind.source != stage->dir()) {
        CHECK(bind.source == workspace / ".git" / bind.target.filename());
        CHECK(bind.read_only == (bind.target.filename() == "hooks"));
        targets.push_back(bind.target.string());
      }
    }
    std::sort(targets.begin(), targets.end());
    CHECK(targets == std::vector<std::string>{"/.sandshim/git/hooks", "/.sandshim/git/objects",
                                              "/.sandshim/git/refs"});
    CHECK(fs::read_symlink(stage->dir() / "objects") == "/.sandshim/git/objects");
    CHECK_FALSE(fs::exists(fs::symlink_status(stage->dir() / "gate")));
  }
}

TEST_CASE(
    "git stage, a broker's: a .git file with a second link, or a linked .git, is not staged") {
  BrokerWorkspace ws;
  const fs::path& workspace = ws.workspace;
  fs::create_hard_link(workspace / ".git" / "config", ws.dir.path() / "elsewhere");
  CHECK(broker_stage(workspace) == nullptr);  // a link to a file the caller may not read
  fs::remove(ws.dir.path() / "elsewhere");
  CHECK(broker_stage(workspace) != nullptr);
  fs::rename(workspace / ".git", ws.dir.path() / "real-git");
  fs::create_directory_symlink(ws.dir.path() / "real-git", workspace / ".git");
  CHECK(broker_stage(workspace) == nullptr);
}

TEST_CASE(
    "git stage, a broker's: the run's changes are handed back, and the client carries them as "
    "direct mode does") {
  BrokerWorkspace ws;
  const fs::path& workspace = ws.workspace;
  write_text(workspace / ".git" / "MERGE_HEAD", k_id + "\n");
  auto stage = broker_stage(workspace);
  REQUIRE(stage);
  replace(stage->dir() / "HEAD", "ref: refs/heads/topic\n");
  replace(stage->dir() / "index", k_index + "changed");
  replace(stage->dir() / "config", "[core]\n\tfsmonitor = touch pwned\n");
  write_text(stage->dir() / "ORIG_HEAD", k_other_id + "\n");
  fs::remove(stage->dir() / "MERGE_HEAD");
  HandedGit handed = stage->hand_back();
  CHECK(handed_names(handed) ==
        std::vector<std::string>{"HEAD", "MERGE_HEAD (removed)", "ORIG_HEAD", "index"});
  CHECK(handed.left_behind == std::vector<std::string>{"config"});
  stage->release();  // the descriptors keep what they hand back
  CHECK_FALSE(fs::exists(stage->dir() / "HEAD"));
  write_text(workspace / ".git" / "index", k_index + "the host's own");  // changed meanwhile
  GitCarry carry = carry_handed(handed, 0);
  CHECK(carry.carried == std::vector<std::string>{"HEAD", "MERGE_HEAD (removed)", "ORIG_HEAD"});
  CHECK(carry.kept == std::vector<std::string>{"index (changed on the host meanwhile)"});
  CHECK(carry.left_behind == std::vector<std::string>{"config"});
  CHECK(read_text(workspace / ".git" / "HEAD") == "ref: refs/heads/topic\n");
  CHECK(read_text(workspace / ".git" / "ORIG_HEAD") == k_other_id + "\n");
  CHECK_FALSE(fs::exists(workspace / ".git" / "MERGE_HEAD"));
  CHECK(read_text(workspace / ".git" / "config") == "[core]\n\trepositoryformatversion = 0\n");
}

TEST_CASE(
    "git stage, a broker's: nothing is carried into a .git replaced since the broker read it, nor "
    "out of git's shape") {
  BrokerWorkspace ws;
  const fs::path& workspace = ws.workspace;
  auto stage = broker_stage(workspace);
  REQUIRE(stage);
  replace(stage->dir() / "HEAD", "ref: refs/heads/../../config\n");
  HandedGit bent = stage->hand_back();
  GitCarry carry = carry_handed(bent, 0);
  CHECK(carry.left_behind == std::vector<std::string>{"HEAD (not in git's shape)"});
  CHECK(read_text(workspace / ".git" / "HEAD") == "ref: refs/heads/main\n");
  replace(stage->dir() / "HEAD", "ref: refs/heads/topic\n");
  HandedGit handed = stage->hand_back();
  fs::rename(workspace / ".git", ws.dir.path() / "old-git");
  make_git_dir(workspace);
  carry = carry_handed(handed, 0);
  CHECK(carry.kept == std::vector<std::string>{"HEAD (the host's .git was replaced meanwhile)"});
  CHECK(read_text(workspace / ".git" / "HEAD") == "ref: refs/heads/main\n");
}

TEST_CASE("git stage, a broker's: stages set aside go at the next open, never through a link") {
  BrokerWorkspace ws;
  fs::path outside = ws.dir.path() / "outside.txt";
  write_text(outside, "keep\n");
  fs::path aside;
  {
    auto stage = broker_stage(ws.workspace);
    REQUIRE(stage);
    fs::path dir = stage->dir();
    stage->release(true);  // a deadline: its container may outlive the run
    for (const auto& entry : fs::directory_iterator(git_stage_root())) {
      if (entry.path().filename().string().starts_with(dir.filename().string() + ".abandoned-")) {
        aside = entry.path();
      }
    }
  }
  REQUIRE_FALSE(aside.empty());
  fs::create_directories(aside / "refs" / "left");
  fs::create_symlink(outside, aside / "refs" / "left" / "link");  // what a run could leave
  auto next = broker_stage(ws.workspace);
  REQUIRE(next);
  CHECK_FALSE(fs::exists(fs::symlink_status(aside)));
  CHECK(read_text(outside) == "keep\n");
}
