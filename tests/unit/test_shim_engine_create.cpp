#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "engine/engine_create.hpp"
#include "engine/engine_run.hpp"
#include "run/hardening.hpp"
#include "test_audit_support.hpp"
#include "test_shim_spec_sample.hpp"

using namespace sandshim::shim;
using nlohmann::json;

namespace {

RunSpec sample_spec() {
  return sandshim::test::sample_run_spec();
}

const std::vector<std::string> k_client_env = {"PATH=/usr/bin", "LANG=C.UTF-8"};

std::optional<std::string> no_files(const std::string&) {
  return std::nullopt;
}

CreateTranslation translate(const Policy& policy, const RunSpec& spec,
                            const ReadFile& read_file = no_files) {
  return translate_run_arguments(build_run_arguments(policy, spec), k_client_env, read_file);
}

json body_of(const Policy& policy, const RunSpec& spec, const ReadFile& read_file = no_files) {
  auto translation = translate(policy, spec, read_file);
  REQUIRE(translation.request);
  return json::parse(translation.request->body);
}

bool contains(const json& list, const json& item) {
  return list.is_array() && std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

TEST_CASE("every flag of docker's default run has its API form", "[engine_create]") {
  auto translation = translate(Policy{}, sample_spec());
  INFO(translation.unsupported);
  REQUIRE(translation.request);
  CHECK(translation.request->name == "sandshim-0123456789abcdef");
  CHECK(translation.request->auto_remove);
  CHECK(translation.request->interactive);
  CHECK_FALSE(translation.request->tty);
}

TEST_CASE("the create body carries each hardening flag of the default run", "[engine_create]") {
  json body = body_of(Policy{}, sample_spec());
  const json& host = body["HostConfig"];
  CHECK(host["ReadonlyRootfs"] == true);
  CHECK(host["NetworkMode"] == "none");
  CHECK(host["CapDrop"] == json::array({"ALL"}));
  CHECK(contains(host["SecurityOpt"], "no-new-privileges:true"));
  CHECK(host["Init"] == true);
  CHECK(host["AutoRemove"] == true);
  CHECK(host["LogConfig"]["Type"] == "none");
  CHECK(host["Memory"] == 536870912);
  CHECK(host["MemorySwap"] == 536870912);
  CHECK(host["NanoCpus"] == 1000000000);
  CHECK(host["PidsLimit"] == 64);
  CHECK(host["Tmpfs"]["/tmp"] == "rw,noexec,nosuid,nodev,size=67108864");
  CHECK(host["ShmSize"].is_number_integer());
  CHECK(contains(host["Ulimits"], json{{"Name", "nofile"}, {"Soft", 1024}, {"Hard", 1024}}));
  CHECK(contains(host["Ulimits"], json{{"Name", "core"}, {"Soft", 0}, {"Hard", 0}}));
  CHECK(contains(host["Mounts"], json{{"Type", "bind"},
                                      {"Source", "/work/project"},
                                      {"Target", "/work/project"},
                                      {"ReadOnly", true}}));
  CHECK(body["User"] == "1000:1000");
  CHECK(body["Hostname"] == "sandbox");
  CHECK(body["WorkingDir"] == "/work/project/src");
  CHECK(body["Labels"]["org.sandshim.run"] == "0123456789abcdef");
  CHECK(body["Labels"]["org.sandshim.deadline"] == "1700000000");
  CHECK(body["AttachStdin"] == true);
  CHECK(body["OpenStdin"] == true);
  CHECK(body["StdinOnce"] == true);
  CHECK(body["Tty"] == false);
  CHECK(contains(body["Env"], "HOME=/tmp"));
  CHECK(body["Image"] == "sandshim/python:bookworm");
}

TEST_CASE("a looser policy loosens the same fields, so each check above can fail",
          "[engine_create]") {
  Policy policy;
  policy.network = Network::bridge;
  policy.workspace_mode = WorkspaceMode::rw;
  policy.tmp_exec = true;
  policy.memory_bytes = 1 << 30;
  policy.cpus = 2.5;
  policy.pids = 128;
  RunSpec spec = sample_spec();
  spec.tty = true;
  json body = body_of(policy, spec);
  const json& host = body["HostConfig"];
  CHECK(host["NetworkMode"] == "bridge");
  CHECK(host["Mounts"][0]["ReadOnly"] == false);
  CHECK(host["Tmpfs"]["/tmp"] == "rw,exec,nosuid,nodev,size=67108864");
  CHECK(host["Memory"] == 1 << 30);
  CHECK(host["NanoCpus"] == 2500000000);
  CHECK(host["PidsLimit"] == 128);
  CHECK(body["Tty"] == true);
}

TEST_CASE("the caller's argv stays the container's command, never an option", "[engine_create]") {
  json body = body_of(Policy{}, sample_spec());
  CHECK(body["Cmd"] == json::array({"python", "--network=host", "-c", "print(1)"}));
  CHECK(body["HostConfig"]["NetworkMode"] == "none");
}

TEST_CASE("a bare --env takes its value from the client's environment, as the client does",
          "[engine_create]") {
  json body = body_of(Policy{}, sample_spec());
  CHECK(contains(body["Env"], "LANG=C.UTF-8"));
  RunSpec spec = sample_spec();
  spec.env = {{"ABSENT", ""}};
  auto translation =
      translate_run_arguments(build_run_arguments(Policy{}, spec), {"PATH=/x"}, no_files);
  REQUIRE(translation.request);
  json other = json::parse(translation.request->body);
  for (const auto& entry : other["Env"]) {
    CHECK_FALSE(entry.get<std::string>().starts_with("ABSENT"));
  }
}

TEST_CASE("a seccomp profile travels as its content, and an unreadable one keeps the client",
          "[engine_create]") {
  RunSpec spec = sample_spec();
  spec.seccomp_profile = "/state/seccomp/profile.json";
  auto read = [](const std::string& path) -> std::optional<std::string> {
    return path == "/state/seccomp/profile.json"
               ? std::optional<std::string>("{ \"defaultAction\": \"SCMP_ACT_ERRNO\" }")
               : std::nullopt;
  };
  json body = body_of(Policy{}, spec, read);
  CHECK(contains(body["HostConfig"]["SecurityOpt"],
                 "seccomp={\"defaultAction\":\"SCMP_ACT_ERRNO\"}"));
  auto unreadable = translate(Policy{}, spec);
  CHECK_FALSE(unreadable.request);
  CHECK(unreadable.unsupported.starts_with("--security-opt=seccomp="));
}

namespace {

RunSpec podman_spec() {
  RunSpec spec = sample_spec();
  spec.dialect.kind = "podman";
  spec.dialect.init_path = "/usr/bin/tini-static";
  spec.seccomp_profile = "/state/seccomp/profile.json";
  spec.cache_dir = "/home/u/.cache/sandshim/python";
  return spec;
}

std::optional<std::string> any_file(const std::string&) {
  return "{}";
}

json podman_body(const Policy& policy, const RunSpec& spec) {
  auto translation =
      translate_podman_run_arguments(build_run_arguments(policy, spec), k_client_env, any_file);
  INFO(translation.unsupported);
  REQUIRE(translation.request);
  CHECK(translation.request->libpod);
  return json::parse(translation.request->body);
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

json mount_at(const json& body, const std::string& destination) {
  for (const auto& mount : body["mounts"]) {
    if (mount["destination"] == destination) {
      return mount;
    }
  }
  return json();
}

}  // namespace

TEST_CASE("podman's create body carries every hardening its CLI arguments carry",
          "[engine_create]") {
  RunSpec spec = podman_spec();
  auto args = build_run_arguments(Policy{}, spec);
  // The CLI's podman-only flags, each of which the compat create would drop.
  for (const char* flag : {"--read-only-tmpfs=false", "--cgroups=enabled", "--unsetenv=TERM",
                           "--init-path=/usr/bin/tini-static"}) {
    INFO(flag);
    CHECK(has_flag(args, flag));
  }
  json body = podman_body(Policy{}, spec);
  CHECK(body["read_only_filesystem"] == true);
  CHECK(body["read_write_tmpfs"] == false);
  CHECK(body["cgroups_mode"] == "enabled");
  CHECK(body["unsetenv"] == json::array({"TERM"}));
  CHECK(body["init"] == true);
  CHECK(body["init_path"] == "/usr/bin/tini-static");
  CHECK(body["netns"] == json{{"nsmode", "none"}});
  CHECK(body["cap_drop"] == json::array({"ALL"}));
  CHECK(body["no_new_privileges"] == true);
  CHECK(body["seccomp_profile_path"] == "/state/seccomp/profile.json");
  CHECK(body["user"] == "1000:1000");
  CHECK_FALSE(body.contains("remove"));  // the API client removes it after its wait
  CHECK(body["log_configuration"] == json{{"driver", "none"}});
  CHECK(body["resource_limits"]["memory"] == json{{"limit", 536870912}, {"swap", 536870912}});
  CHECK(body["resource_limits"]["cpu"]["quota"] == 100000);
  CHECK(body["resource_limits"]["cpu"]["period"] == 100000);
  CHECK(body["resource_limits"]["pids"]["limit"] == 64);
  CHECK(contains(body["r_limits"], json{{"type", "nofile"}, {"soft", 1024}, {"hard", 1024}}));
  CHECK(contains(body["r_limits"], json{{"type", "core"}, {"soft", 0}, {"hard", 0}}));
  CHECK(mount_at(body, "/tmp") ==
        json{{"destination", "/tmp"},
             {"type", "tmpfs"},
             {"source", "tmpfs"},
             {"options", {"rw", "noexec", "nosuid", "nodev", "size=67108864"}}});
  CHECK(mount_at(body, "/work/project") == json{{"destination", "/work/project"},
                                                {"type", "bind"},
                                                {"source", "/work/project"},
                                                {"options", {"rbind", "ro"}}});
  json cache = mount_at(body, "/sandshim-cache");
  INFO(body["mounts"].dump());
  CHECK(cache["options"] == json::array({"rbind", "noexec", "nosuid", "nodev"}));
  CHECK(body["shm_size"].is_number_integer());
  CHECK(body["work_dir"] == "/work/project/src");
  CHECK(body["hostname"] == "sandbox");
  CHECK(body["labels"]["org.sandshim.run"] == "0123456789abcdef");
  CHECK(body["env"]["HOME"] == "/tmp");
  CHECK(body["env"]["LANG"] == "C.UTF-8");
  CHECK(body["stdin"] == true);
  CHECK_FALSE(body.contains("terminal"));
  CHECK(body["image"] == "sandshim/python:bookworm");
  CHECK(body["command"] == json::array({"python", "--network=host", "-c", "print(1)"}));
  CHECK(body["name"] == "sandshim-0123456789abcdef");
}

TEST_CASE("podman's looser policy loosens the same fields, so each check above can fail",
          "[engine_create]") {
  Policy policy;
  policy.network = Network::bridge;
  policy.workspace_mode = WorkspaceMode::rw;
  policy.memory_bytes = 1 << 30;
  policy.cpus = 2.5;
  RunSpec spec = podman_spec();
  spec.tty = true;
  json body = podman_body(policy, spec);
  CHECK(body["netns"] == json{{"nsmode", "bridge"}});
  CHECK(mount_at(body, "/work/project")["options"] == json::array({"rbind"}));
  CHECK(body["resource_limits"]["memory"]["limit"] == 1 << 30);
  CHECK(body["resource_limits"]["cpu"]["quota"] == 250000);
  CHECK(body["terminal"] == true);
  CHECK_FALSE(body.contains("unsetenv"));  // a terminal keeps TERM, as the CLI does
}

TEST_CASE("podman's flags without a libpod form keep its client", "[engine_create]") {
  auto args = build_run_arguments(Policy{}, podman_spec());
  for (const char* extra : {"--privileged", "--read-only-tmpfs=true", "--cgroups=disabled",
                            "--network=host", "--security-opt=label=disable",
                            "--mount=type=bind,source=/a,target=/a,bind-propagation=shared"}) {
    auto more = args;
    more.insert(more.begin() + 1, extra);
    auto translation = translate_podman_run_arguments(more, k_client_env, any_file);
    INFO(extra);
    CHECK_FALSE(translation.request);
    CHECK(translation.unsupported.starts_with(extra));
  }
  Policy gvisor;
  gvisor.runtime = Runtime::runsc;  // podman's global --runtime flags come before `run`
  CHECK_FALSE(translate_podman_run_arguments(build_run_arguments(gvisor, podman_spec()),
                                             k_client_env, any_file)
                  .request);
  auto unreadable = translate_podman_run_arguments(args, k_client_env, no_files);
  CHECK_FALSE(unreadable.request);
}

TEST_CASE("a flag without an API form, and podman's dialect, keep the client", "[engine_create]") {
  auto args = build_run_arguments(Policy{}, sample_spec());
  args.insert(args.begin() + 1, "--privileged");
  auto translation = translate_run_arguments(args, k_client_env, no_files);
  CHECK_FALSE(translation.request);
  CHECK(translation.unsupported == "--privileged");

  RunSpec podman = sample_spec();
  podman.dialect.kind = "podman";
  auto podman_translation = translate(Policy{}, podman);
  CHECK_FALSE(podman_translation.request);
  CHECK_FALSE(podman_translation.unsupported.empty());

  auto mount = build_run_arguments(Policy{}, sample_spec());
  mount.insert(mount.begin() + 1, "--mount=type=bind,source=/a,target=/a,bind-propagation=shared");
  CHECK_FALSE(translate_run_arguments(mount, k_client_env, no_files).request);
}

TEST_CASE("mount fields split as the client splits CSV", "[engine_create]") {
  CHECK(split_csv_fields("type=bind,source=/a,target=/b,readonly") ==
        std::vector<std::string>{"type=bind", "source=/a", "target=/b", "readonly"});
  CHECK(split_csv_fields("type=bind,\"source=/a,b\",\"target=/x\"\"y\"") ==
        std::vector<std::string>{"type=bind", "source=/a,b", "target=/x\"y"});
}

TEST_CASE("a refused start exits as docker run does", "[engine_create]") {
  CHECK(start_failure_code("failed to create task: exec: \"nope\": executable file not found in "
                           "$PATH: unknown") == 127);
  CHECK(start_failure_code("exec: \"/work/x\": permission denied: unknown") == 126);
  CHECK(start_failure_code("cgroup: something else") == 125);
}

TEST_CASE("a cpuset and its online file travel too, and none without one", "[engine_create]") {
  RunSpec spec = sample_spec();
  spec.cpu_choices = {0, 1};
  spec.cpu_online_file = "/state/cpus/online-1";
  json body = body_of(Policy{}, spec);
  CHECK(body["HostConfig"]["CpusetCpus"].is_string());
  CHECK(body["HostConfig"]["Mounts"].size() == 2);
  json plain = body_of(Policy{}, sample_spec());
  CHECK_FALSE(plain["HostConfig"].contains("CpusetCpus"));
  CHECK(plain["HostConfig"]["Mounts"].size() == 1);
}

TEST_CASE("a run's file reader gives a named file's whole content, or none", "[engine_create]") {
  sandshim::audit::testing::TempDir dir;
  auto profile = dir.path() / "profile.json";
  std::ofstream(profile) << "{\"defaultAction\":\n\"SCMP_ACT_ERRNO\"}";
  CHECK(read_named_file(profile.string()) == "{\"defaultAction\":\n\"SCMP_ACT_ERRNO\"}");
  CHECK_FALSE(read_named_file((dir.path() / "missing.json").string()));
}
