#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"
#include "engine/remote_workspace.hpp"

using nlohmann::json;
using sandshim::Fatal;
using sandshim::shim::remote_create_body;
using sandshim::shim::ShippedWorkspace;

namespace {

json bind(const std::string& source, const std::string& target, bool read_only) {
  return {{"Type", "bind"}, {"Source", source}, {"Target", target}, {"ReadOnly", read_only}};
}

ShippedWorkspace shipped() {
  ShippedWorkspace shipped;
  shipped.workspace = "/home/me/repo";
  shipped.volume = "sandshim-ws-abc-def";
  shipped.writable = {"/home/me/repo/out"};
  shipped.writable_volumes = {"sandshim-r1-rw0"};
  return shipped;
}

}  // namespace

TEST_CASE("remote create body: the workspace is the snapshot volume, read-only",
          "[remote_workspace]") {
  json body = {{"Image", "sandshim/python:bookworm"},
               {"HostConfig",
                {{"AutoRemove", true},
                 {"Mounts",
                  {bind("/home/me/repo", "/home/me/repo", true),
                   bind("/home/me/repo/out", "/home/me/repo/out", false),
                   bind("/home/me/repo/out/.git", "/home/me/repo/out/.git", true),
                   bind("/run/x/empty", "/home/me/repo/.env", true)}}}}};
  json out = json::parse(remote_create_body(body.dump(), shipped()));
  const json& mounts = out["HostConfig"]["Mounts"];
  REQUIRE(mounts.size() == 2);
  CHECK(mounts[0] == json{{"Type", "volume"},
                          {"Source", "sandshim-ws-abc-def"},
                          {"Target", "/home/me/repo"},
                          {"ReadOnly", true}});
  CHECK(mounts[1] == json{{"Type", "volume"},
                          {"Source", "sandshim-r1-rw0"},
                          {"Target", "/home/me/repo/out"},
                          {"ReadOnly", false}});
  CHECK(out["HostConfig"]["AutoRemove"] == false);  // out/ is fetched after the exit
  CHECK(out["Image"] == "sandshim/python:bookworm");
  ShippedWorkspace nothing_back = shipped();
  nothing_back.writable.clear();
  nothing_back.writable_volumes.clear();
  body["HostConfig"]["Mounts"] = json::array({bind("/home/me/repo", "/home/me/repo", true)});
  out = json::parse(remote_create_body(body.dump(), nothing_back));
  CHECK(out["HostConfig"]["AutoRemove"] == true);  // the engine removes it at its exit
  CHECK(out["HostConfig"]["Mounts"].size() == 1);
}

TEST_CASE("remote create body: a mount of another host path is refused", "[remote_workspace]") {
  json body = {{"HostConfig",
                {{"Mounts",
                  {bind("/home/me/repo", "/home/me/repo", true),
                   bind("/usr/lib/python3", "/usr/lib/python3", true)}}}}};
  CHECK_THROWS_WITH(
      remote_create_body(body.dump(), shipped()),
      Catch::Contains("the mount of \"/usr/lib/python3\" names a file of this machine"));
}
