#include <fcntl.h>
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "run/workspace_gate.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::shim;
using sandshim::Fatal;
using sandshim::UniqueFd;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

namespace {

std::string identity_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

struct Workspace {
  TempDir dir;
  fs::path root = dir.path() / "ws";
  fs::path outside = dir.path() / "locked";
  UniqueFd fd;

  Workspace() {
    write_text(root / "AGENTS.md", "rules\n");
    fs::create_directories(root / ".claude");
    write_text(outside / "secret", "the secret\n");
    fd = UniqueFd(::open(root.c_str(), O_PATH | O_DIRECTORY));
  }

  std::vector<std::pair<fs::path, std::string>> check(const std::string& name) const {
    return binds_beneath(fd.get(), root, {checked_bind(root / name, root / name, true)});
  }
};

}  // namespace

TEST_CASE("a bind inside the workspace carries the identity of what the workspace holds there") {
  Workspace ws;
  auto found = ws.check(".claude");
  REQUIRE(found.size() == 1);
  CHECK(found[0].first == ws.root / ".claude");
  CHECK(found[0].second == identity_of(ws.root / ".claude"));
  SECTION("a link that stays inside leads to its target, as the engine follows it") {
    fs::create_symlink("AGENTS.md", ws.root / "CLAUDE.md");
    CHECK(ws.check("CLAUDE.md")[0].second == identity_of(ws.root / "AGENTS.md"));
  }
}

TEST_CASE("a bind whose name leads out of the workspace refuses the run, named") {
  Workspace ws;
  const std::string refused =
      "the workspace's .vscode leads out of the workspace (a symbolic link); the engine would "
      "mount what it points to, so the run is refused: replace the link with what it points "
      "to, or keep sandbox.workspace = ro; nothing ran";
  SECTION("an absolute link") {
    fs::create_directory_symlink(ws.outside, ws.root / ".vscode");
  }
  SECTION("a relative one") {
    fs::create_directory_symlink("../locked", ws.root / ".vscode");
  }
  SECTION("through a link in between") {
    fs::create_directory_symlink("..", ws.root / "up");
    fs::create_directory_symlink("up/locked", ws.root / ".vscode");
  }
  try {
    ws.check(".vscode");
    FAIL("not refused");
  } catch (const Fatal& e) {
    CHECK(std::string(e.what()) == refused);
  }
}

TEST_CASE("binds from elsewhere are not the workspace's to check") {
  Workspace ws;
  auto found = binds_beneath(ws.fd.get(), ws.root,
                             {checked_bind(ws.outside, ws.root / ".git", false),
                              checked_bind(ws.outside, ws.outside, false)});
  CHECK(found.empty());
}

TEST_CASE("a bind that is a link to nothing, or that cannot be reached, is named as such") {
  Workspace ws;
  fs::create_symlink("missing.md", ws.root / "CLAUDE.md");
  CHECK_THROWS_WITH(ws.check("CLAUDE.md"),
                    "the workspace's CLAUDE.md is a link to nothing; the run cannot keep it "
                    "read-only: remove the link or make what it names; nothing ran");
  CHECK_THROWS_WITH(ws.check(".codex"),
                    "the workspace's .codex went away while the run started; retry; nothing ran");
}

TEST_CASE("a workspace path bound at a fixed place outside it carries what its source leads to") {
  Workspace ws;
  fs::create_directories(ws.root / ".git" / "objects");
  auto bound = [&] {
    return binds_beneath(
        ws.fd.get(), ws.root,
        {checked_bind(ws.root / ".git" / "objects", "/.sandshim/git/objects", false)});
  };
  auto found = bound();
  REQUIRE(found.size() == 1);
  CHECK(found[0].first == "/.sandshim/git/objects");
  CHECK(found[0].second == identity_of(ws.root / ".git" / "objects"));
  SECTION("a source that leads out of the workspace refuses the run") {
    fs::remove(ws.root / ".git" / "objects");
    fs::create_directory_symlink(ws.outside, ws.root / ".git" / "objects");
    CHECK_THROWS_WITH(bound(), Catch::Contains("leads out of the workspace"));
  }
}
