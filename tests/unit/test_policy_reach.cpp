#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "policy/reach.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

TEST_CASE("the protected names a workspace lacks are the ones a run may not create", "[reach]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / ".claude");
  std::ofstream(dir.path() / "CLAUDE.md") << "notes\n";
  int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::vector<std::string> absent = absent_protected_names(fd);
  ::close(fd);
  auto lacks = [&](const std::string& name) {
    return std::find(absent.begin(), absent.end(), name) != absent.end();
  };
  CHECK(lacks(".envrc"));
  CHECK(lacks(".sandshim.conf"));
  CHECK_FALSE(lacks(".claude"));
  CHECK_FALSE(lacks("CLAUDE.md"));
}

TEST_CASE("what a run created is moved aside by name, a link as a link, only protected names",
          "[reach]") {
  ScratchDir dir;
  const fs::path& ws = dir.path();
  std::ofstream(ws / ".envrc") << "touch pwned\n";
  fs::create_directories(ws / ".claude");
  std::ofstream(ws / ".claude" / "settings.json") << "{}\n";
  std::ofstream(ws / "outside") << "kept\n";
  fs::create_symlink(ws / "outside", ws / ".vscode");  // the link moves, its target stays
  std::ofstream(ws / "notes.txt") << "not protected\n";

  std::vector<std::string> lines =
      move_created_aside(ws, "run-1", {".envrc", ".claude", ".vscode", "notes.txt", ".husky"});
  CHECK(lines == std::vector<std::string>{"created .envrc, moved to .envrc.sandshim-run-1",
                                          "created .claude, moved to .claude.sandshim-run-1",
                                          "created .vscode, moved to .vscode.sandshim-run-1",
                                          "created .husky (left in place: remove it)"});
  CHECK_FALSE(fs::exists(fs::symlink_status(ws / ".envrc")));
  CHECK(fs::is_regular_file(ws / ".envrc.sandshim-run-1"));
  CHECK(fs::is_regular_file(ws / ".claude.sandshim-run-1" / "settings.json"));
  CHECK(fs::is_symlink(ws / ".vscode.sandshim-run-1"));
  CHECK(fs::is_regular_file(ws / "outside"));
  CHECK(fs::is_regular_file(ws / "notes.txt"));  // not a protected name: left alone
  CHECK(aside_name("CLAUDE.md", "abc") == "CLAUDE.md.sandshim-abc");
}

TEST_CASE("a protected name that is a link is noted with its inode and text", "[reach]") {
  ScratchDir dir;
  std::ofstream(dir.path() / "AGENTS.md") << "rules\n";
  fs::create_symlink("AGENTS.md", dir.path() / "CLAUDE.md");
  fs::create_directories(dir.path() / ".claude");
  int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto links = protected_links(fd);
  REQUIRE(links.size() == 1);
  CHECK(links[0].name == "CLAUDE.md");
  CHECK(links[0].text == "AGENTS.md");
  struct stat st {};
  REQUIRE(::lstat((dir.path() / "CLAUDE.md").c_str(), &st) == 0);
  CHECK(links[0].ino == st.st_ino);
  CHECK(protected_link_at(fd, "CLAUDE.md") == links[0]);
  fs::remove(dir.path() / "CLAUDE.md");  // its inode may come back for the next file at once
  std::ofstream(dir.path() / "CLAUDE.md") << "injected\n";
  CHECK_FALSE(protected_link_at(fd, "CLAUDE.md").has_value());
  fs::remove(dir.path() / "CLAUDE.md");
  fs::create_symlink("/etc/passwd", dir.path() / "CLAUDE.md");
  CHECK(protected_link_at(fd, "CLAUDE.md") != links[0]);
  ::close(fd);
}

TEST_CASE("a protected link a run removed is made again as it was, never over what is there",
          "[reach]") {
  ScratchDir dir;
  std::ofstream(dir.path() / "AGENTS.md") << "rules\n";
  std::ofstream(dir.path() / ".envrc") << "a file the run made\n";
  std::vector<ProtectedLink> links = {{"CLAUDE.md", 0, "AGENTS.md"},
                                      {".envrc", 0, "AGENTS.md"},
                                      {"notes.md", 0, "/etc/passwd"}};  // no protected name
  auto lines = restore_protected_links(dir.path(), links);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "removed the link CLAUDE.md -> AGENTS.md, made again");
  CHECK(lines[1].starts_with("removed the link .envrc -> AGENTS.md (not made again: "));
  CHECK(fs::read_symlink(dir.path() / "CLAUDE.md") == "AGENTS.md");
  CHECK_FALSE(fs::is_symlink(dir.path() / ".envrc"));
  CHECK_FALSE(fs::exists(fs::symlink_status(dir.path() / "notes.md")));
}
