#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "run/container_run.hpp"
#include "run/hardening.hpp"
#include "run/one_stream.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;

namespace {

RunSpec one_stream_spec() {
  RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.image = "img";
  spec.command = {"python3", "-c", "print(1)"};
  spec.user = "1000:1000";
  spec.cwd = spec.workspace = "/w";
  spec.one_stream = true;
  return spec;
}

std::vector<std::string> after_image(const std::vector<std::string>& args) {
  auto image = std::find(args.begin(), args.end(), "img");
  return {image + 1, args.end()};
}

}  // namespace

TEST_CASE("one file twice is one stream; two files or two pipes are two", "[one_stream]") {
  int pipe_a[2];
  int pipe_b[2];
  REQUIRE(::pipe(pipe_a) == 0);
  REQUIRE(::pipe(pipe_b) == 0);
  int duplicate = ::dup(pipe_a[1]);
  CHECK(same_open_file(pipe_a[1], duplicate));        // 2>&1 onto a pipe
  CHECK_FALSE(same_open_file(pipe_a[1], pipe_b[1]));  // two pipes
  int null_a = ::open("/dev/null", O_WRONLY);
  int null_b = ::open("/dev/null", O_WRONLY);
  CHECK(same_open_file(null_a, null_b));  // the same file opened twice
  CHECK_FALSE(same_open_file(pipe_a[1], null_a));
  CHECK_FALSE(same_open_file(pipe_a[1], -1));
  for (int fd : {pipe_a[0], pipe_a[1], pipe_b[0], pipe_b[1], duplicate, null_a, null_b}) {
    ::close(fd);
  }
}

TEST_CASE("one stream: the image's shell puts stderr onto stdout, the argv unchanged",
          "[one_stream][hardening]") {
  RunSpec spec = one_stream_spec();
  std::vector<std::string> expected = {"/bin/sh", "-c", "exec \"$@\" 2>&1", "sh",
                                       "python3", "-c", "print(1)"};
  CHECK(after_image(build_run_arguments(Policy{}, spec)) == expected);
  spec.one_stream = false;
  CHECK(after_image(build_run_arguments(Policy{}, spec)) == spec.command);
}

TEST_CASE("one stream on the warm paths: exec wraps, the launcher gets one descriptor",
          "[one_stream][hardening]") {
  RunSpec spec = one_stream_spec();
  auto exec = build_exec_arguments(Policy{}, spec);
  CHECK(std::find(exec.begin(), exec.end(), "exec \"$@\" 2>&1") != exec.end());
  spec.launcher_pid = 42;  // the launcher is handed the stdout pipe as stderr instead
  auto launch = build_launch_arguments(Policy{}, spec);
  CHECK(std::find(launch.begin(), launch.end(), "exec \"$@\" 2>&1") == launch.end());
  CHECK(launcher_stderr(true, 5, 6) == 5);
  CHECK(launcher_stderr(false, 5, 6) == 6);
}

TEST_CASE("one stream: a script the image lacks is still named from the stdout stream",
          "[one_stream][classify]") {
  RunSpec spec;
  spec.command = {"/usr/bin/python3", "/usr/bin/pytest-3"};
  spec.image = "sandshim/python:bookworm";
  RunFacts facts;
  facts.client_code = 2;
  facts.stdout_head =
      "/usr/bin/python3: can't open file '/usr/bin/pytest-3': [Errno 2] No such file";
  facts.stdout_bytes = static_cast<int64_t>(facts.stdout_head.size());
  CHECK(classify_outcome(facts, spec, Policy{}).exit_code == 2);  // as two streams would see it
  read_program_stderr_from_stdout(facts);
  CHECK(classify_outcome(facts, spec, Policy{}).exit_code == 127);
  RunFacts more;  // the program wrote more than the head holds: its output is its own
  more.stdout_head = facts.stderr_head;
  more.stdout_bytes = 1 << 20;
  read_program_stderr_from_stdout(more);
  CHECK(more.stderr_head.empty());
}
