#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "run/protected_copies.hpp"
#include "skip.hpp"
#include "test_hooks_support.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::Fatal;
using sandshim::UniqueFd;
using sandshim::test::ScopedEnv;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

namespace {

std::string identity_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A workspace with agent settings, a hook script, a link among them, and the broker's state.
struct Workspace {
  TempDir dir;
  fs::path root = dir.path() / "ws";
  ScopedEnv state{"XDG_STATE_HOME", (dir.path() / "state").string()};
  UniqueFd fd;
  uid_t caller = ::geteuid();

  Workspace() {
    write_text(root / "AGENTS.md", "rules\n");
    fs::create_symlink("AGENTS.md", root / "CLAUDE.md");
    write_text(root / ".claude" / "settings.json", "{}\n");
    write_text(root / ".claude" / "commands" / "review.md", "review\n");
    write_text(root / ".husky" / "pre-commit", "#!/bin/sh\necho hook\n");
    fs::permissions(root / ".husky" / "pre-commit", fs::perms::owner_all);
    fs::create_symlink("/etc/passwd", root / ".claude" / "gate");
    write_text(root / "src.py", "print(1)\n");
    fd = UniqueFd(::open(root.c_str(), O_PATH | O_DIRECTORY));
  }

  std::unique_ptr<ProtectedCopies> make(const std::string& run_id = "r1") const {
    return ProtectedCopies::make(fd.get(), root, caller, run_id);
  }
};

bool has_target(const ProtectedCopies& copies, const fs::path& target) {
  for (const BindPath& bind : copies.binds()) {
    if (bind.target == target) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("a broker's rw run covers each protected name with a read-only copy of its own") {
  Workspace ws;
  auto copies = ws.make();
  REQUIRE(copies->binds().size() == copies->identities().size());
  for (size_t i = 0; i < copies->binds().size(); ++i) {
    const BindPath& bind = copies->binds()[i];
    CHECK(bind.read_only);
    CHECK(bind.source.parent_path() == copies->dir());  // the broker's, never the caller's
    CHECK(bind.target == ws.root / bind.source.filename());
    CHECK(copies->identities()[i] == std::make_pair(bind.target, identity_of(bind.source)));
  }
  CHECK(has_target(*copies, ws.root / ".claude"));
  CHECK(has_target(*copies, ws.root / ".husky"));
  CHECK_FALSE(has_target(*copies, ws.root / ".git"));  // the git stage's
  CHECK_FALSE(has_target(*copies, ws.root / "src.py"));
  CHECK(text_of(copies->dir() / ".claude" / "commands" / "review.md") == "review\n");

  SECTION("nothing in a copy runs, and no link in it leads anywhere") {
    struct stat st {};
    REQUIRE(::stat((copies->dir() / ".husky" / "pre-commit").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0444);
    CHECK(text_of(copies->dir() / ".husky" / "pre-commit") == "#!/bin/sh\necho hook\n");
    CHECK_FALSE(fs::exists(fs::symlink_status(copies->dir() / ".claude" / "gate")));
  }
  SECTION("two names of one file are covered once, at the name met first") {
    CHECK(has_target(*copies, ws.root / "CLAUDE.md"));
    CHECK_FALSE(has_target(*copies, ws.root / "AGENTS.md"));
    CHECK(text_of(copies->dir() / "CLAUDE.md") == "rules\n");
  }
}

TEST_CASE("the copies are refreshed in place: a warm container's binds show the new content") {
  Workspace ws;
  std::string settings;
  std::string hook;
  {
    auto first = ws.make();
    settings = identity_of(first->dir() / ".claude");
    hook = identity_of(first->dir() / "CLAUDE.md");
  }
  write_text(ws.root / "AGENTS.md", "new rules\n");
  fs::remove_all(ws.root / ".husky");
  auto second = ws.make("r2");
  CHECK(identity_of(second->dir() / ".claude") == settings);
  CHECK(identity_of(second->dir() / "CLAUDE.md") == hook);
  CHECK(text_of(second->dir() / "CLAUDE.md") == "new rules\n");
  CHECK_FALSE(has_target(*second, ws.root / ".husky"));
  CHECK_FALSE(fs::exists(second->dir() / ".husky"));  // gone from the workspace, gone here
}

TEST_CASE("a run beside another of the workspace gets copies of its own, removed after it") {
  Workspace ws;
  auto held = ws.make("r1");
  fs::path own;
  {
    auto beside = ws.make("r2");
    own = beside->dir();
    CHECK(own != held->dir());
    CHECK(fs::exists(own / ".claude" / "settings.json"));
  }
  CHECK_FALSE(fs::exists(own));
  CHECK(fs::exists(held->dir() / ".claude" / "settings.json"));
}

TEST_CASE("a run's own copies left by a broker that died mid-run go with the next shared run") {
  Workspace ws;
  fs::path own;
  std::unique_ptr<ProtectedCopies> live;
  {
    auto held = ws.make("r1");
    own = fs::path(held->dir()).concat(".run-r2");
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // makes its own copies and dies without releasing them
      auto beside = ws.make("r2");
      ::_exit(beside->dir() == own ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    live = ws.make("r3");  // a run that goes on
  }
  CHECK(fs::exists(own / ".claude" / "settings.json"));
  auto next = ws.make("r4");  // takes the shared directory: sweeps
  CHECK_FALSE(fs::exists(own));
  CHECK_FALSE(fs::exists(fs::path(own).concat(".lock")));
  fs::path live_dir = live->dir();
  CHECK(fs::exists(live_dir / ".claude" / "settings.json"));  // its lock is held: it stays
  live.reset();
  CHECK_FALSE(fs::exists(live_dir));
  CHECK_FALSE(fs::exists(fs::path(live_dir).concat(".lock")));
  CHECK(fs::exists(next->dir() / ".claude" / "settings.json"));
}

TEST_CASE("a protected name that cannot be copied refuses the run in one line") {
  Workspace ws;
  SECTION("a link out of the workspace") {
    fs::remove(ws.root / "CLAUDE.md");
    fs::create_symlink("/etc", ws.root / "CLAUDE.md");
    CHECK_THROWS_WITH(ws.make(), Catch::Contains("leads out of the workspace"));
  }
  SECTION("a file that is someone else's and not readable by all") {
    if (::geteuid() != 0) {
      sandshim::test::skip_test("needs root to own a file for another user");
      return;
    }
    ws.caller = 4242;
    fs::permissions(ws.root / ".claude" / "settings.json", fs::perms::owner_read);
    CHECK_THROWS_WITH(ws.make(), Catch::Contains(".claude/settings.json") &&
                                     Catch::Contains("someone else's") &&
                                     Catch::Contains("nothing ran"));
  }
  SECTION("a fifo at a protected name") {
    fs::remove(ws.root / "CLAUDE.md");
    REQUIRE(::mkfifo((ws.root / "CLAUDE.md").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(ws.make(), Catch::Contains("neither a file nor a directory"));
  }
}

TEST_CASE("a worktree's .git file is copied with the rest; a .git directory is the stage's") {
  Workspace ws;
  fs::create_directories(ws.root / ".git");
  CHECK_FALSE(has_target(*ws.make(), ws.root / ".git"));
  fs::remove(ws.root / ".git");
  write_text(ws.root / ".git", "gitdir: /repo/.git/worktrees/ws\n");
  auto copies = ws.make("r2");
  CHECK(has_target(*copies, ws.root / ".git"));
  CHECK(text_of(copies->dir() / ".git") == "gitdir: /repo/.git/worktrees/ws\n");
}
