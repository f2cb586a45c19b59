#include <unistd.h>
#include <catch2/catch.hpp>

#include "common/cgroup.hpp"

using namespace sandshim;

namespace {

// Lines as a cgroup v1 host (the memory controller on its own hierarchy) and a v2 host print them.
const char* k_mountinfo_v1 =
    "24 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
    "33 28 0:28 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "38 28 0:33 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory\n"
    "39 28 0:34 / /sys/fs/cgroup/cpu,cpuacct rw shared:16 - cgroup cgroup rw,cpu,cpuacct\n";
const char* k_mountinfo_v2 =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:9 - cgroup2 cgroup2 rw\n";

}  // namespace

TEST_CASE("a process's memory cgroup is its v1 memory line, else its unified one", "[cgroup]") {
  auto v1 = memory_cgroup_of("5:devices:/docker/abc\n4:cpu,memory:/docker/abc\n0::/\n");
  REQUIRE(v1);
  CHECK(v1->path == "/docker/abc");
  CHECK_FALSE(v1->unified);
  auto v2 = memory_cgroup_of("0::/system.slice/docker-abc.scope\n");
  REQUIRE(v2);
  CHECK(v2->path == "/system.slice/docker-abc.scope");
  CHECK(v2->unified);
  // A colon in the path belongs to the path.
  CHECK(memory_cgroup_of("4:memory:/a:b\n")->path == "/a:b");
  CHECK_FALSE(memory_cgroup_of(""));
  CHECK_FALSE(memory_cgroup_of("9:name=systemd:/\n4:cpu:/x\n"));
}

TEST_CASE("the memory cgroup's directory is found beneath its mount's root", "[cgroup]") {
  CHECK(memory_cgroup_dir(k_mountinfo_v1, {"/docker/abc", false}) ==
        "/sys/fs/cgroup/memory/docker/abc");
  CHECK(memory_cgroup_dir(k_mountinfo_v1, {"/", false}) == "/sys/fs/cgroup/memory");
  CHECK(memory_cgroup_dir(k_mountinfo_v2, {"/system.slice/docker-abc.scope", true}) ==
        "/sys/fs/cgroup/system.slice/docker-abc.scope");
  // The v1 memory mount is not the unified one, nor the other way round.
  CHECK_FALSE(memory_cgroup_dir(k_mountinfo_v2, {"/docker/abc", false}));
  CHECK(memory_cgroup_dir(k_mountinfo_v1, {"/x", true}) == "/sys/fs/cgroup/unified/x");
  // A mount of part of the hierarchy (a container's view) holds only what is beneath its root.
  const char* nested =
      "40 28 0:33 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n";
  CHECK(memory_cgroup_dir(nested, {"/docker/abc/inner", false}) == "/sys/fs/cgroup/memory/inner");
  CHECK_FALSE(memory_cgroup_dir(nested, {"/docker/abcdef", false}));
  CHECK_FALSE(memory_cgroup_dir(nested, {"/other", false}));
  CHECK_FALSE(memory_cgroup_dir("garbage\n1 2 3\n", {"/", false}));
}

TEST_CASE("the kill count is read from memory.oom_control and memory.events", "[cgroup]") {
  CHECK(oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n") == 3u);
  CHECK(oom_kill_count("low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\noom_group_kill 0\n") == 1u);
  // An older kernel's oom_control has no count: unknown, not zero.
  CHECK_FALSE(oom_kill_count("oom_kill_disable 0\nunder_oom 0\n"));
  CHECK_FALSE(oom_kill_count("oom_kill x\n"));
  CHECK_FALSE(oom_kill_count("oom_kill -1\n"));
}

TEST_CASE("this process's memory cgroup has a kill count where one is mounted", "[cgroup]") {
  CHECK_FALSE(open_oom_kill_counter(0).valid());
  CHECK_FALSE(open_oom_kill_counter(-1).valid());
  CHECK_FALSE(read_oom_kill_count(-1));
  UniqueFd counter = open_oom_kill_counter(::getpid());
  if (!counter.valid()) {
    WARN("this process is in no memory cgroup of its own here: the live lookup is not checked");
    return;
  }
  CHECK(read_oom_kill_count(counter.get()));
  CHECK(read_oom_kill_count(counter.get()) == read_oom_kill_count(counter.get()));  // pread
}
