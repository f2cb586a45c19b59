// The engine client against the real engine, run by tests/integration/suite_engine_api.sh (the
// tag is hidden: a plain run of the unit tests needs no engine). The socket, image and container
// name prefix come from SANDSHIM_TEST_ENGINE_SOCKET, SANDSHIM_TEST_IMAGE and
// SANDSHIM_TEST_CONTAINER_PREFIX; every container made here is removed here.
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/process.hpp"
#include "engine/api_client.hpp"

using namespace std::chrono_literals;
using sandshim::engine::ApiClient;
using sandshim::engine::Channel;
using sandshim::engine::EventFilter;

namespace {

std::string from_env(const char* name) {
  const char* value = std::getenv(name);
  REQUIRE(value != nullptr);
  return value;
}

ApiClient live_engine() {
  return ApiClient(from_env("SANDSHIM_TEST_ENGINE_SOCKET"), 30s);
}

std::string container_name(const std::string& what) {
  return from_env("SANDSHIM_TEST_CONTAINER_PREFIX") + what;
}

const char* const k_label = "org.sandshim.test-engine-api";

std::string create_body(const std::string& script, bool open_stdin) {
  nlohmann::json body = {
      {"Image", from_env("SANDSHIM_TEST_IMAGE")},
      {"Cmd", {"sh", "-c", script}},
      {"OpenStdin", open_stdin},
      {"StdinOnce", open_stdin},
      {"AttachStdin", open_stdin},
      {"AttachStdout", true},
      {"AttachStderr", true},
      {"Labels", {{k_label, "1"}}},
      // As root, podman raises nofile and nproc to its defaults unless told, and runc then fails
      // the start where the host's hard limits are lower.
      {"HostConfig",
       {{"NetworkMode", "none"},
        {"Ulimits",
         {{{"Name", "nofile"}, {"Soft", 1024}, {"Hard", 1024}},
          {{"Name", "nproc"}, {"Soft", 1024}, {"Hard", 1024}}}}}},
  };
  return body.dump();
}

bool wait_readable(int fd) {
  pollfd ready{fd, POLLIN, 0};
  return ::poll(&ready, 1, 30000) == 1;
}

}  // namespace

TEST_CASE("the real engine answers ping, version, info and image inspection", "[.engine_live]") {
  auto api = live_engine();
  CHECK(api.ping().ok());
  auto version = nlohmann::json::parse(api.version().body, nullptr, false);
  CHECK(version.contains("ApiVersion"));
  CHECK(api.info().ok());
  CHECK(sandshim::engine::image_id(api.inspect_image(from_env("SANDSHIM_TEST_IMAGE")))
            .find("sha256:") == 0);
  auto missing = api.inspect_image("sandshim/no-such-image:never");
  CHECK(missing.status == 404);
  CHECK(sandshim::engine::image_id(missing).empty());
}

TEST_CASE("create, attach, start, wait and remove run a container through the API",
          "[.engine_live][.engine_live_run]") {
  auto api = live_engine();
  std::string name = container_name("attach");
  EventFilter filter;
  filter.containers = {name};
  filter.since_s = sandshim::wall_clock_ms() / 1000 - 1;
  auto events = api.events(filter);
  REQUIRE(events.await_confirmation(30s));

  auto created = api.create(name, create_body("cat; echo err >&2; exit 42", true));
  REQUIRE(created.status == 201);
  auto listed = sandshim::engine::container_ids(api.list_by_label(k_label));
  auto id = nlohmann::json::parse(created.body)["Id"].get<std::string>();
  CHECK(std::find(listed.begin(), listed.end(), id) != listed.end());

  auto attach = api.attach(name, false);
  REQUIRE(attach.attached());
  REQUIRE(api.start(name).ok());
  CHECK(attach.write_some("hello\n") == 6);
  attach.close_stdin();
  std::string out, err;
  while (!attach.ended() && wait_readable(attach.fd())) {
    for (const auto& chunk : attach.read_available()) {
      (chunk.channel == Channel::stderr_channel ? err : out) += chunk.data;
    }
  }
  CHECK(out == "hello\n");
  CHECK(err == "err\n");
  CHECK_FALSE(attach.malformed());
  CHECK(sandshim::engine::wait_status(api.wait(name, "not-running", 30s)) == 42);
  CHECK(api.remove(name).ok());
  CHECK(api.remove(name).status == 404);

  // The removal is docker's `destroy`, podman's `remove`.
  std::vector<std::string> actions;
  auto removed = [&] {
    return std::find_if(actions.begin(), actions.end(),
                        [](const std::string& action) {
                          return action == "destroy" || action == "remove";
                        }) -
           actions.begin();
  };
  // podman has ended the stream early under load (CI, once): the events since the filter's
  // start are then read again from a new stream, once.
  bool reopened = false;
  while (removed() == static_cast<std::ptrdiff_t>(actions.size())) {
    if (events.ended() && !reopened) {
      events = api.events(filter);
      actions.clear();
      reopened = true;
    }
    if (events.ended() || !wait_readable(events.fd())) {
      break;
    }
    for (const auto& event : events.read_available()) {
      CHECK(event.name() == name);
      actions.push_back(event.action);
    }
  }
  auto seen = [&](const char* action) {
    return std::find(actions.begin(), actions.end(), action) - actions.begin();
  };
  CHECK(seen("create") < seen("start"));
  CHECK(seen("start") < seen("die"));
  CHECK(seen("die") < removed());
  CHECK(removed() < static_cast<std::ptrdiff_t>(actions.size()));
}

TEST_CASE("kill ends a running container with its signal", "[.engine_live][.engine_live_run]") {
  auto api = live_engine();
  std::string name = container_name("kill");
  REQUIRE(api.create(name, create_body("exec sleep 300", false)).status == 201);
  REQUIRE(api.start(name).ok());
  CHECK(api.kill(name, "KILL").ok());
  CHECK(sandshim::engine::wait_status(api.wait(name, "not-running", 30s)) == 137);
  CHECK(api.remove(name).ok());
}
