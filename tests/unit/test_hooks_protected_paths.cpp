#include <catch2/catch.hpp>

#include "hooks/protected_paths.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;
using sandshim::testing::EnvOverride;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

TEST_CASE("protected places are whole path components, not string prefixes", "[hooks][protected]") {
  TempDir home;
  EnvOverride env{{"HOME", home.path().string()},
                  {"XDG_CONFIG_HOME", (home / ".config").string()},
                  {"XDG_STATE_HOME", (home / "state").string()}};
  sandshim::shim::Policy policy;
  policy.shim_dir = (home / "bin").string();
  ProtectedPaths paths = protected_paths(policy, home / "project");
  CHECK(protected_path_reason(home / "bin/python3", "/", paths));
  CHECK_FALSE(protected_path_reason(home / "binaries/x", "/", paths));
  CHECK(protected_path_reason(home / "state/sandshim/audit.db-wal", "/", paths));
  CHECK(protected_path_reason(home / "state/sandshim", "/", paths));  // the directory itself
  CHECK_FALSE(protected_path_reason(home / "state/other/file", "/", paths));
  CHECK(protected_path_reason("../.config/sandshim/config", home / "project", paths));
}

TEST_CASE("git's core.hooksPath of the workspace is protected", "[hooks][protected]") {
  TempDir dir;
  EnvOverride env{{"HOME", (dir / "home").string()}};
  write_text(dir / ".git/config", "[core]\n\tbare = false\n\thooksPath = tools/hooks\n");
  ProtectedPaths paths = protected_paths(sandshim::shim::Policy{}, dir.path());
  std::optional<std::string> what =
      protected_path_reason("tools/hooks/pre-commit", dir.path(), paths);
  REQUIRE(what);
  CHECK(what->starts_with("git's hooks (core.hooksPath)"));
  CHECK_FALSE(protected_path_reason("tools/build.sh", dir.path(), paths));
  CHECK(protected_write_refusal("x", "y") ==
        "sandshim: \"x\" is y, which the sandbox depends on; an agent may not change it. Ask the "
        "user to make the change");
}

TEST_CASE("the protected places are listed once, when first asked for; copies share the list",
          "[hooks][protected]") {
  int listings = 0;
  ProtectedPaths paths([&listings] {
    ++listings;
    return std::vector<ProtectedPlace>{{"/home/u/.bashrc", false, "a shell start-up file"}};
  });
  ProtectedPaths copy = paths;
  CHECK(listings == 0);  // a command that writes nothing never lists them
  CHECK(protected_path_reason("/home/u/.bashrc", "/", copy));
  CHECK(protected_path_reason("/home/u/.bashrc", "/", paths));
  CHECK_FALSE(protected_path_reason("/home/u/.profile", "/", paths));
  CHECK(listings == 1);
  CHECK_FALSE(protected_path_reason("/home/u/.bashrc", "/", ProtectedPaths{}));
}
