#include <algorithm>
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "policy/masks.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> masked_relative(const MaskPlan& plan, const fs::path& root) {
  std::vector<std::string> paths;
  for (const auto& masked : plan.paths) {
    paths.push_back(fs::relative(masked.path, root).string() + (masked.directory ? "/" : ""));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

MaskPlan plan_defaults(const fs::path& root, int64_t limit = 1000) {
  return plan_masks(root, effective_hide_globs({}, {}), limit);
}

}  // namespace

TEST_CASE("the default globs mask secrets at any depth and leave the rest", "[masks]") {
  ScratchDir dir;
  for (const char* name : {".env", "app/.env.local", "certs/server.pem", "deploy/id_rsa",
                           ".ssh/config", "src/main.py", "README.md", "keys.txt", "env"}) {
    dir.write(name, "x");
  }
  auto plan = plan_defaults(dir.path());
  CHECK(masked_relative(plan, dir.path()) ==
        std::vector<std::string>{".env", ".ssh/", "app/.env.local", "certs/server.pem",
                                 "deploy/id_rsa"});
  CHECK(plan.matched_globs ==
        std::vector<std::string>{"*.pem", ".env", ".env.*", ".ssh/", "id_rsa*"});
}

TEST_CASE("a directory glob matches directories only; a glob with / matches the path", "[masks]") {
  ScratchDir dir;
  dir.write(".aws", "a file named like the directory");
  dir.write("config/prod.yml", "x");
  dir.write("other/config/prod.yml", "x");
  auto plan = plan_masks(dir.path(), effective_hide_globs({"config/prod.yml"}, {}), 100);
  CHECK(masked_relative(plan, dir.path()) == std::vector<std::string>{"config/prod.yml"});
}

TEST_CASE("unhide takes globs back, hide adds them", "[masks]") {
  CHECK(effective_hide_globs({"*.secret", ".env"}, {".env", "*.kdbx"}).back() == "*.secret");
  auto globs = effective_hide_globs({}, {".env"});
  CHECK(std::find(globs.begin(), globs.end(), ".env") == globs.end());
  CHECK(invalid_hide_glob("/etc/passwd") != "");
  CHECK(invalid_hide_glob("../x") != "");
  CHECK(invalid_hide_glob("secrets/") == "");
}

TEST_CASE("git's config is masked only when it holds credentials", "[masks]") {
  ScratchDir dir;
  dir.write(".git/config", "[remote \"origin\"]\n\turl = https://example.org/r.git\n");
  dir.write(".git/objects/ab/.env", "never searched");
  CHECK(plan_defaults(dir.path()).paths.empty());
  dir.write(".git/config", "[remote \"origin\"]\n\turl = https://me:ghp_x@example.org/r.git\n");
  CHECK(masked_relative(plan_defaults(dir.path()), dir.path()) ==
        std::vector<std::string>{".git/config"});
  dir.write(".git/config", "[http]\n\textraHeader = Authorization: Bearer x\n");
  CHECK(plan_defaults(dir.path()).matched_globs ==
        std::vector<std::string>{".git/config (credentials)"});
}

TEST_CASE("a matching symlink masks its target inside the workspace", "[masks]") {
  ScratchDir dir;
  dir.write("settings/prod.cfg", "password");
  fs::create_symlink("settings/prod.cfg", dir.path() / ".env");
  fs::create_symlink("/etc/hostname", dir.path() / "outside.pem");
  CHECK(masked_relative(plan_defaults(dir.path()), dir.path()) ==
        std::vector<std::string>{"settings/prod.cfg"});
}

TEST_CASE("past the entry limit the plan is refused, naming the key", "[masks]") {
  ScratchDir dir;
  for (int i = 0; i < 20; ++i) {
    dir.write("f" + std::to_string(i), "x");
  }
  CHECK_THROWS_WITH(plan_defaults(dir.path(), 10), Catch::Contains("sandbox.hide_limit = 10"));
  CHECK_NOTHROW(plan_defaults(dir.path(), 20));
}

TEST_CASE("each masked path becomes a read-only bind of an empty file or directory", "[masks]") {
  MaskPlan plan;
  plan.paths = {{"/w/.env", false}, {"/w/.ssh", true}};
  auto binds = mask_binds(plan, {"/s/empty", "/s/empty.d"});
  REQUIRE(binds.size() == 2);
  CHECK(binds[0].source == "/s/empty");
  CHECK(binds[0].target == "/w/.env");
  CHECK(binds[0].read_only);
  CHECK(binds[1].source == "/s/empty.d");
  CHECK(binds[1].target == "/w/.ssh");
  CHECK(binds[1].read_only);
}
