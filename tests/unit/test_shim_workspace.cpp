#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "policy/workspace.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

TEST_CASE("the workspace is the git root, else the cwd", "[workspace]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "repo/.git");
  fs::create_directories(dir.path() / "repo/src/deep");
  fs::create_directories(dir.path() / "plain/sub");
  CHECK(resolve_workspace(dir.path() / "repo/src/deep", "/home/x") == dir.path() / "repo");
  CHECK(resolve_workspace(dir.path() / "plain/sub", "/home/x") == dir.path() / "plain/sub");
}

TEST_CASE("/ and the home directory are never the workspace", "[workspace]") {
  ScratchDir dir;
  CHECK_THROWS_WITH(resolve_workspace("/", "/home/x"), Catch::Contains("refusing to mount /"));
  CHECK_THROWS_WITH(resolve_workspace(dir.path(), dir.path()),
                    Catch::Contains("refusing to mount your home directory"));
}

TEST_CASE("a workspace the container user cannot read is refused with the fix", "[workspace]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "private/project");
  ::chmod(dir.path().c_str(), 0755);
  ::chmod((dir.path() / "private").c_str(), 0700);
  ::chmod((dir.path() / "private/project").c_str(), 0755);
  // uid 65534 owns nothing here, so only the "other" bits apply.
  CHECK_THROWS_WITH(require_readable_by(dir.path() / "private/project", 65534, 65534),
                    Catch::Contains("cannot read the workspace") &&
                        Catch::Contains((dir.path() / "private").string()) &&
                        Catch::Contains("chmod o+rx"));
  ::chmod((dir.path() / "private").c_str(), 0755);
  CHECK_NOTHROW(require_readable_by(dir.path() / "private/project", 65534, 65534));
}

TEST_CASE("existing host paths outside the workspace are named", "[workspace]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "ws/sub");
  dir.write("ws/a.py", "");
  dir.write("outside.py", "");
  fs::path ws = dir.path() / "ws";
  auto outside = arguments_outside_workspace(
      {"python", "a.py", "./a.py", "../outside.py", (dir.path() / "outside.py").string(),
       "/etc/hostname", "/tmp", "-c", "print('/not/a/path')", "../missing.py"},
      ws / "sub" / "..", ws);
  CHECK(outside == std::vector<std::string>{"../outside.py", (dir.path() / "outside.py").string()});
}

TEST_CASE("a path host mode mounts (a pipx venv's script) is visible, not outside", "[workspace]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "ws");
  fs::create_directories(dir.path() / "venv/bin");
  dir.write("venv/bin/tool", "");
  dir.write("other.py", "");
  std::vector<std::string> argv = {"python", (dir.path() / "venv/bin/tool").string(),
                                   (dir.path() / "other.py").string()};
  CHECK(arguments_outside_workspace(argv, dir.path() / "ws", dir.path() / "ws").size() == 2);
  CHECK(arguments_outside_workspace(argv, dir.path() / "ws", dir.path() / "ws",
                                    {dir.path() / "venv"}) ==
        std::vector<std::string>{(dir.path() / "other.py").string()});
}
