#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "run/broker_launch.hpp"
#include "skip.hpp"

using namespace sandshim::shim;
namespace fs = std::filesystem;

namespace {

bool on_tmpfs(const fs::path& path) {
  struct statfs info {};
  return ::statfs(path.c_str(), &info) == 0 && info.f_type == 0x01021994;
}

// A fresh directory under /dev/shm (a tmpfs on Linux), removed at the end.
struct ShmDir {
  fs::path path = fs::path("/dev/shm") / ("sandshim-unit-launch-" + std::to_string(::getpid()));
  ShmDir() { fs::remove_all(path); }
  ~ShmDir() {
    serve_launchers_in("/dev/null/sandshim");  // this process serves no launchers again
    fs::remove_all(path);
  }
};

RunSpec broker_spec() {
  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.gate = WorkspaceGate{"/usr/libexec/sandshim/sandshim-gate", "2049:17", "2049:18", {}};
  return spec;
}

}  // namespace

TEST_CASE("a broker serves launchers only from a private directory of its own on a tmpfs",
          "[broker_launch]") {
  ShmDir dir;
  if (!on_tmpfs("/dev/shm")) {
    sandshim::test::skip_test("/dev/shm is not a tmpfs here");
    return;
  }
  CHECK(serve_launchers_in(dir.path).empty());
  REQUIRE(broker_launch_root() == dir.path);
  CHECK((fs::status(dir.path).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK(uses_broker_launch(broker_spec()));
  CHECK_FALSE(uses_broker_launch(RunSpec{}));  // direct mode: no gate, /proc/PID/root
  std::string why_not = serve_launchers_in("/dev/null/sandshim");
  CHECK(why_not.find("is not a directory of this user's") != std::string::npos);
  CHECK_FALSE(broker_launch_root());
  CHECK_FALSE(uses_broker_launch(broker_spec()));
  fs::path disk = fs::current_path();
  if (!on_tmpfs(disk)) {
    CHECK(serve_launchers_in(disk).find("is not on a tmpfs") != std::string::npos);
    CHECK_FALSE(broker_launch_root());
  }
}

TEST_CASE("a container's launcher directory: 1733, mounted, for this uid; removed with its content",
          "[broker_launch]") {
  ShmDir dir;
  if (!on_tmpfs("/dev/shm")) {
    sandshim::test::skip_test("/dev/shm is not a tmpfs here");
    return;
  }
  fs::create_directories(dir.path / "0123456789abcdef");  // left by a previous broker
  REQUIRE(serve_launchers_in(dir.path).empty());
  CHECK_FALSE(fs::exists(dir.path / "0123456789abcdef"));
  auto flags = broker_launch_flags("0123456789abcdef");
  fs::path run_dir = dir.path / "0123456789abcdef";
  struct stat st {};
  REQUIRE(::stat(run_dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 01733);
  REQUIRE(flags.size() == 3);
  CHECK(flags[0] == "--mount=type=bind,source=" + run_dir.string() + ",target=/.sandshim/launch");
  CHECK(flags[1] == "--env=SANDSHIM_LAUNCH_SOCKET=/.sandshim/launch/launch.sock");
  CHECK(flags[2] == "--env=SANDSHIM_LAUNCH_ADMIT=" + std::to_string(::geteuid()));
  std::ofstream(run_dir / "left-by-the-caller") << "x";
  remove_broker_launch_dir("0123456789abcdef");
  CHECK_FALSE(fs::exists(run_dir));
}
