#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <set>

#include "common/paths.hpp"

using sandshim::companion_candidates;
using sandshim::companion_places;
using sandshim::find_companion;

TEST_CASE("a companion program is looked for beside the binary, then in libexec", "[paths]") {
  auto self = sandshim::self_executable();
  auto candidates = companion_candidates("sandshim-tls", "sandshim");
  REQUIRE(candidates.size() == 2);
  CHECK(candidates[0] == self.parent_path() / "sandshim-tls");
  CHECK(candidates[1] ==
        (self.parent_path() / ".." / "libexec" / "sandshim" / "sandshim-tls").lexically_normal());
  for (const auto& candidate : candidates) {
    CHECK(candidate.is_absolute());  // never a name the working directory could supply
  }
  CHECK_THAT(companion_places("sandshim-tls", "sandshim"),
             Catch::Contains(candidates[0].string()) && Catch::Contains(" and "));
}

TEST_CASE("a companion that is not there, or not executable, is not found", "[paths]") {
  CHECK_FALSE(find_companion("sandshim-no-such-program", "sandshim"));
  // The test binary itself is found beside itself: an executable regular file.
  auto self = sandshim::self_executable();
  CHECK(find_companion(self.filename().string(), "sandshim") == self);
}

namespace {

// A scratch tree of PATH directories, removed at the end of the test.
struct PathTree {
  std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("sandshim-paths-" + std::to_string(::getpid()));
  PathTree() { std::filesystem::create_directories(root); }
  ~PathTree() { std::filesystem::remove_all(root); }
  void file(const std::string& relative, std::filesystem::perms mode) const {
    std::filesystem::create_directories((root / relative).parent_path());
    std::ofstream(root / relative) << "#!/bin/sh\n";
    std::filesystem::permissions(root / relative, mode);
  }
};

}  // namespace

TEST_CASE("each name is found where find_in_path finds it, listing each directory once",
          "[paths]") {
  using std::filesystem::perms;
  PathTree tree;
  auto exec = perms::owner_all;
  tree.file("a/only-in-a", exec);
  tree.file("a/not-executable", perms::owner_read);
  tree.file("b/not-executable", exec);  // the first executable one wins
  tree.file("b/in-both", exec);
  tree.file("c/in-both", exec);
  std::filesystem::create_directories(tree.root / "a" / "a-directory");
  tree.file("c/a-directory", exec);  // a directory of that name is passed over
  std::filesystem::create_symlink(tree.root / "b", tree.root / "b-again");
  std::string a = (tree.root / "a").string(), b = (tree.root / "b").string();
  std::string c = (tree.root / "c").string(), again = (tree.root / "b-again").string();
  std::set<std::string_view> names = {"only-in-a", "not-executable", "in-both", "a-directory",
                                      "nowhere"};
  for (const std::string& path : {a + ":" + b + ":" + c, again + ":" + a + ":" + b + ":" + c,
                                  "relative:" + c + "::" + a + ":" + a, std::string()}) {
    auto found = sandshim::find_each_in_path(names, path);
    for (std::string_view name : names) {
      auto one = sandshim::find_in_path(std::string(name), path, nullptr);
      INFO("PATH=" << path << " name=" << name);
      if (one) {
        REQUIRE(found.contains(std::string(name)));
        // The same file: /bin and /usr/bin may both name it, and the first listed is kept.
        CHECK(std::filesystem::equivalent(found.at(std::string(name)), *one));
      } else {
        CHECK_FALSE(found.contains(std::string(name)));
      }
    }
  }
  CHECK(sandshim::find_each_in_path(names, a + ":" + b + ":" + c).at("in-both") == b + "/in-both");
}
