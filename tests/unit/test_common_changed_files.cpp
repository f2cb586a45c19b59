#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/changed_files.hpp"
#include "common/unique_fd.hpp"
#include "test_shim_support.hpp"

using namespace sandshim;
namespace fs = std::filesystem;

namespace {

// A moment later than everything made so far, on the clock the kernel stamps ctime with.
timespec moment_after_setup() {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // past a coarse tick (HZ 100: 10 ms)
  timespec since = coarse_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  return since;
}

ChangedEntries scan(const fs::path& dir, timespec since, ChangeScanLimits limits = {}) {
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(fd.valid());
  return changed_since(fd.get(), since, limits);
}

bool listed(const ChangedEntries& found, const std::string& path) {
  return std::find(found.paths.begin(), found.paths.end(), path) != found.paths.end();
}

}  // namespace

TEST_CASE("a scan names what changed after the moment and nothing before it", "[changed]") {
  sandshim::test::ScratchDir dir;
  dir.write("src/a.c", "a");
  dir.write("src/b.c", "b");
  dir.write("old/c.txt", "c");
  dir.write("gone/d.txt", "d");
  dir.write("mode.sh", "e");
  dir.write(".git/index", "i");
  timespec since = moment_after_setup();
  CHECK(scan(dir.path(), since).count == 0);

  std::ofstream(dir.path() / "src/a.c", std::ios::app) << "more";  // written
  dir.write("build/out.o", "o");                                   // created, with its dir
  fs::remove(dir.path() / "gone/d.txt");                           // shows as its directory
  fs::permissions(dir.path() / "mode.sh", fs::perms::owner_exec, fs::perm_options::add);
  dir.write(".git/index", "changed");  // git's stage tells its own
  ChangeScanLimits limits;
  limits.skip_names = {".git"};
  ChangedEntries found = scan(dir.path(), since, limits);
  CHECK(listed(found, "src/a.c"));
  CHECK(listed(found, "build"));
  CHECK(listed(found, "build/out.o"));
  CHECK(listed(found, "gone"));
  CHECK(listed(found, "mode.sh"));
  CHECK_FALSE(listed(found, "src"));  // a file written in place leaves its directory alone
  CHECK_FALSE(listed(found, "src/b.c"));
  CHECK_FALSE(listed(found, "old/c.txt"));
  CHECK_FALSE(listed(found, ".git"));
  CHECK_FALSE(listed(found, ".git/index"));
  CHECK(found.count == static_cast<int64_t>(found.paths.size()));
  CHECK(found.unreadable_dirs == 0);
  CHECK_FALSE(found.stopped_at_limit);
}

TEST_CASE("a scan never follows a link, and stops listing but goes on counting", "[changed]") {
  sandshim::test::ScratchDir outside;
  outside.write("secret/x", "x");
  sandshim::test::ScratchDir dir;
  fs::create_symlink(outside.path() / "secret", dir.path() / "link");
  timespec since = moment_after_setup();
  outside.write("secret/y", "y");
  for (int i = 0; i < 30; ++i) {
    dir.write("many/f" + std::to_string(i), "z");
  }
  ChangeScanLimits limits;
  limits.max_listed = 5;
  ChangedEntries found = scan(dir.path(), since, limits);
  CHECK(found.count == 31);  // many/ and its 30 files; nothing behind the link
  CHECK(found.paths.size() == 5);
  CHECK(std::none_of(found.paths.begin(), found.paths.end(),
                     [](const std::string& path) { return path.starts_with("link"); }));

  limits.max_entries = 10;
  ChangedEntries stopped = scan(dir.path(), since, limits);
  CHECK(stopped.stopped_at_limit);
  CHECK(stopped.count < 31);
}
