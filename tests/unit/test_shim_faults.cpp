#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/client_output.hpp"
#include "engine/engine_api.hpp"
#include "run/container_run.hpp"
#include "run/guardian.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::shim;

// What the engine clients print when the daemon dies under a running `docker run`.
constexpr const char* k_lost_engine_line =
    "time=\"2026-11-30T11:02:07Z\" level=error msg=\"error waiting for container: unexpected "
    "EOF\"\n";

TEST_CASE("a removal counts as confirmed only when the engine answered", "[faults]") {
  CHECK(removal_confirmed(false, 0, ""));
  // docker 20.10 daemons behind older clients, and podman, name the missing container instead.
  CHECK(removal_confirmed(false, 1, "Error response from daemon: No such container: sandshim-x"));
  CHECK(removal_confirmed(false, 125, "Error: no container with name or ID \"sandshim-x\" found"));
  // The engine did not answer: stopped, paused (the attempt timed out) or its socket is gone.
  CHECK_FALSE(removal_confirmed(true, 0, ""));
  CHECK_FALSE(removal_confirmed(
      false, 1,
      "Cannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?"));
  CHECK_FALSE(removal_confirmed(false, 1, "permission denied while trying to connect"));
}

TEST_CASE("an API removal counts as confirmed when the engine removed it or never had it",
          "[faults]") {
  using sandshim::engine::Fault;
  using sandshim::engine::Reply;
  CHECK(removal_confirmed(Reply{204, "", Fault::none, ""}));
  CHECK(removal_confirmed(
      Reply{404, R"({"message":"No such container: sandshim-x"})", Fault::none, ""}));
  // Another removal still on its way (AutoRemove): not gone yet, so the guardian retries.
  CHECK_FALSE(removal_confirmed(
      Reply{409, R"({"message":"removal of container sandshim-x is already in progress"})",
            Fault::none, ""}));
  CHECK_FALSE(removal_confirmed(Reply{500, R"({"message":"driver failed"})", Fault::none, ""}));
  CHECK_FALSE(removal_confirmed(Reply{0, "", Fault::timeout, "paused"}));
  CHECK_FALSE(removal_confirmed(Reply{0, "", Fault::unreachable, "No such file or directory"}));
  CHECK_FALSE(removal_confirmed(Reply{0, "", Fault::malformed, "short read"}));
}

TEST_CASE(
    "removals go over the API for docker's local socket with engine.api = on, else the client",
    "[faults]") {
  auto with = [](const std::string& kind, const std::string& endpoint) {
    return Engine{kind, "/usr/bin/" + kind, {}, endpoint, make_dialect(kind, "")};
  };
  Policy policy;
  REQUIRE(policy.engine_api == EngineApi::on);  // the default
  auto socket = [&policy](const Engine& engine) {
    return engine_api_path(engine, policy).transport;
  };
  CHECK(socket(with("docker", "")) ==
        sandshim::engine::Transport(std::filesystem::path("/var/run/docker.sock")));
  // podman's service socket counts only when it answers (one nobody listens on: the default one
  // may have a service behind it on this machine).
  sandshim::test::ScratchDir dir;
  CHECK_FALSE(socket(with("podman", "unix://" + (dir.path() / "nobody-listens.sock").string())));
  CHECK(socket(with("docker", "ssh://me@builder")) ==
        sandshim::engine::Transport(sandshim::engine::SshEndpoint{"me", "builder", "", "", ""}));
  CHECK_FALSE(socket(with("podman", "ssh://me@builder")));
  policy.engine_api = EngineApi::off;
  CHECK_FALSE(socket(with("docker", "")));
}

TEST_CASE("the guardian stops once the run settled and the engine confirmed, or out of patience",
          "[faults]") {
  const int64_t settled = 10'000;
  CHECK_FALSE(guardian_may_stop(settled - 1, settled, true));  // a create may still be on its way
  CHECK(guardian_may_stop(settled + 1, settled, true));
  CHECK_FALSE(guardian_may_stop(settled + 60'000, settled, false));  // silent engine: keep trying
  CHECK(guardian_may_stop(settled + k_unanswered_patience_ms + 1, settled, false));
}

TEST_CASE("a client that lost the engine mid-run is told from the command's own output",
          "[faults]") {
  CHECK(reports_engine_lost(std::string("in sandbox\n") + k_lost_engine_line));
  CHECK_FALSE(reports_engine_lost("in sandbox\n"));
  CHECK_FALSE(reports_engine_lost(
      "docker: Error response from daemon: No such image: sandshim/sh:bookworm.\n"));
}

TEST_CASE("the lost engine is one line naming the client's reason", "[faults]") {
  std::string line = describe_lost_engine(std::string("partial output\n") + k_lost_engine_line);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(
      line.starts_with("the container engine was lost while the command ran (error waiting for "
                       "container: unexpected EOF); "));
  CHECK(line.find("guardian removes the container") != std::string::npos);
}

namespace {

void append_line(const std::string& file, const char* line) {
  int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  ssize_t ignored = ::write(fd, line, std::strlen(line));
  (void)ignored;
  ::close(fd);
}

std::string contents(const std::string& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Waits (polling, at most `limit`) until `file` holds `text`; what it holds then.
std::string wait_for_text(const std::string& file, const std::string& text,
                          std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (contents(file).find(text) == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return contents(file);
}

// A caller process starts detached work that appends "work" to `file`, gives it `window` to
// do so, appends "caller exits" and exits; the file once both lines are there (5 s at most).
std::string order_of_work_and_exit(bool after_exit, const std::string& file,
                                   std::chrono::milliseconds window) {
  std::filesystem::remove(file);
  pid_t caller = ::fork();
  if (caller == 0) {
    auto work = [&file] { append_line(file, "work\n"); };
    if (after_exit) {
      run_detached_after_exit([&](const std::function<void()>& wait_for_caller) {
        wait_for_caller();
        work();
      });
    } else {
      run_detached(work);
    }
    wait_for_text(file, "work", window);
    append_line(file, "caller exits\n");
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(caller, &status, 0);
  wait_for_text(file, "work", std::chrono::seconds(5));
  return contents(file);
}

}  // namespace

TEST_CASE("a run's background work starts once the run's process has exited", "[faults][pool]") {
  std::string file = (std::filesystem::temp_directory_path() /
                      ("sandshim-detached-" + std::to_string(::getpid()) + ".txt"))
                         .string();
  // Plain detached work (a guardian) runs beside its caller at once.
  CHECK(order_of_work_and_exit(false, file, std::chrono::seconds(5)) == "work\ncaller exits\n");
  // A refill, or a warm container's removal, waits for the caller's exit (within its patience).
  CHECK(order_of_work_and_exit(true, file, std::chrono::milliseconds(200)) ==
        "caller exits\nwork\n");
  std::filesystem::remove(file);
}
