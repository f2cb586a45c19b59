#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

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

ApiCreate create_of(const Policy& policy, const RunSpec& spec, const ReadFile& read_file = no_files,
                    const std::vector<std::string>& client_env = k_client_env) {
  return docker_create(build_create_spec(policy, spec), CreateInputs{client_env, read_file});
}

bool has_arg(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

json body_of(const Policy& policy, const RunSpec& spec, const ReadFile& read_file = no_files) {
  auto create = create_of(policy, spec, read_file);
  INFO(create.unsupported);
  REQUIRE(create.request);
  return json::parse(create.request->body);
}

bool contains(const json& list, const json& item) {
  return list.is_array() && std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

TEST_CASE("every field of docker's default run has its API form", "[engine_create]") {
  auto create = create_of(Policy{}, sample_spec());
  INFO(create.unsupported);
  REQUIRE(create.request);
  CHECK(create.request->name == "sandshim-0123456789abcdef");
  CHECK(create.request->auto_remove);
  CHECK(create.request->interactive);
  CHECK_FALSE(create.request->tty);
  CHECK_FALSE(create.request->libpod);
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

TEST_CASE(
    "a variable passed by name takes its value from the client's environment, as the client "
    "does",
    "[engine_create]") {
  json body = body_of(Policy{}, sample_spec());
  CHECK(contains(body["Env"], "LANG=C.UTF-8"));
  RunSpec spec = sample_spec();
  spec.env = {{"ABSENT", ""}};
  CHECK(has_arg(build_run_arguments(Policy{}, spec), "--env=ABSENT"));
  auto create = create_of(Policy{}, spec, no_files, {"PATH=/x"});
  REQUIRE(create.request);
  json other = json::parse(create.request->body);
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
  auto unreadable = create_of(Policy{}, spec);
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

ApiCreate podman_of(const CreateSpec& create, const ReadFile& read_file = any_file) {
  return podman_create(create, CreateInputs{k_client_env, read_file});
}

json podman_body(const Policy& policy, const RunSpec& spec) {
  auto create = podman_of(build_create_spec(policy, spec));
  INFO(create.unsupported);
  REQUIRE(create.request);
  CHECK(create.request->libpod);
  CHECK_FALSE(create.request->auto_remove);
  return json::parse(create.request->body);
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

TEST_CASE("podman's fields without a libpod form keep its client", "[engine_create]") {
  CreateSpec base = build_create_spec(Policy{}, podman_spec());
  REQUIRE(podman_of(base).request);
  std::vector<std::pair<std::string, CreateSpec>> cases;
  cases.emplace_back("--read-only-tmpfs=true", base);
  cases.back().second.read_only_tmpfs = true;
  cases.emplace_back("--cgroups=disabled", base);
  cases.back().second.cgroups = "disabled";
  cases.emplace_back("--network=host", base);
  cases.back().second.network = "host";
  cases.emplace_back("--mount=", base);
  cases.back().second.mounts.push_back(bind_mount("/a", "/a", false));
  cases.back().second.mounts.back().options = {"bind-propagation=shared"};
  for (const auto& [field, create] : cases) {
    auto refused = podman_of(create);
    INFO(field);
    CHECK_FALSE(refused.request);
    CHECK(refused.unsupported.starts_with(field));
  }
  Policy gvisor;
  gvisor.runtime = Runtime::runsc;  // podman's global --runtime flags come before `run`
  CHECK_FALSE(podman_of(build_create_spec(gvisor, podman_spec())).request);
  CHECK_FALSE(podman_of(base, no_files).request);
}

TEST_CASE("a field without an API form, and podman's dialect, keep the client", "[engine_create]") {
  CreateSpec create = build_create_spec(Policy{}, sample_spec());
  create.mounts.push_back(bind_mount("/a", "/a", false));
  create.mounts.back().options = {"bind-propagation=shared"};
  auto refused = docker_create(create, CreateInputs{k_client_env, no_files});
  CHECK_FALSE(refused.request);
  CHECK(refused.unsupported.starts_with("--mount="));

  RunSpec podman = sample_spec();
  podman.dialect.kind = "podman";
  auto podman_refused = create_of(Policy{}, podman);
  CHECK_FALSE(podman_refused.request);
  CHECK_FALSE(podman_refused.unsupported.empty());
  create = build_create_spec(Policy{}, sample_spec());
  create.pull = "always";
  CHECK_FALSE(docker_create(create, CreateInputs{k_client_env, no_files}).request);
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
  ReadFile read = CreateInputs{}.read_file;
  CHECK(read(profile.string()) == "{\"defaultAction\":\n\"SCMP_ACT_ERRNO\"}");
  CHECK_FALSE(read((dir.path() / "missing.json").string()));
}

namespace {

using Values = std::vector<std::string>;
using Text = std::string;

Text text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// Each docker flag the hardening emits, and its values as docker's create body holds them.
std::map<std::string, Values> flags_in_body(const json& body, const std::string& name) {
  const json& host = body["HostConfig"];
  std::map<std::string, Values> flags = {
      {"name", {name}},
      {"hostname", {text(body["Hostname"])}},
      {"pull", {"never"}},
      {"log-driver", {text(host["LogConfig"]["Type"])}},
      {"network", {text(host["NetworkMode"])}},
      {"user", {text(body["User"])}},
      {"shm-size", {text(host["ShmSize"])}},
      {"workdir", {text(body["WorkingDir"])}},
      {"memory", {text(host["Memory"])}},
      {"memory-swap", {text(host["MemorySwap"])}},
      {"pids-limit", {text(host["PidsLimit"])}},
      {"cpus", {cpus_text(host["NanoCpus"].get<double>() / 1e9)}}};
  auto add = [&](const std::string& flag, const std::string& value) {
    flags[flag].push_back(value);
  };
  for (const auto& label : body["Labels"].items()) {
    add("label", label.key() + "=" + text(label.value()));
  }
  for (const auto& [key, flag] : std::map<std::string, std::string>{
           {"AutoRemove", "rm"}, {"Init", "init"}, {"ReadonlyRootfs", "read-only"}}) {
    if (host.value(key, false)) {
      add(flag, "");
    }
  }
  if (body["OpenStdin"] == true) {
    add("interactive", "");
  }
  if (body["Tty"] == true) {
    add("tty", "");
  }
  if (host.contains("CpusetCpus")) {
    add("cpuset-cpus", text(host["CpusetCpus"]));
  }
  for (const auto& cap : host["CapDrop"]) {
    add("cap-drop", text(cap));
  }
  for (const auto& option : host["SecurityOpt"]) {
    add("security-opt", text(option));
  }
  for (const auto& tmpfs : host["Tmpfs"].items()) {
    add("tmpfs", tmpfs.key() + ":" + text(tmpfs.value()));
  }
  for (const auto& mount : host["Mounts"]) {
    add("mount", "type=bind,source=" + text(mount["Source"]) + ",target=" + text(mount["Target"]) +
                     (mount["ReadOnly"] == true ? ",readonly" : ""));
  }
  for (const auto& limit : host["Ulimits"]) {
    add("ulimit", text(limit["Name"]) + "=" + text(limit["Soft"]) + ":" + text(limit["Hard"]));
  }
  for (const auto& entry : body["Env"]) {
    add("env", text(entry));
  }
  return flags;
}

// The flags of a `run` argument list, before its image, by name.
std::map<std::string, Values> flags_in_args(const std::vector<std::string>& args,
                                            const std::string& image) {
  std::map<std::string, Values> flags;
  for (size_t i = 1; i < args.size() && args[i] != image; ++i) {
    size_t eq = args[i].find('=');
    flags[args[i].substr(2, eq == std::string::npos ? eq : eq - 2)].push_back(
        eq == std::string::npos ? "" : args[i].substr(eq + 1));
  }
  return flags;
}

}  // namespace

TEST_CASE("the client's arguments and the create body serialize the same spec, flag by flag",
          "[engine_create]") {
  RunSpec spec = sample_spec();
  spec.tty = true;
  spec.cpu_choices = {0, 1};
  spec.cpu_online_file = "/state/cpus/online-1";
  spec.cache_dir = "/state/cache/abc-1000";
  spec.masks.paths = {{"/work/project/.env", false}};
  spec.mask_sources = {"/state/empty", "/state/empty.d"};
  Policy policy;
  policy.network = Network::bridge;
  policy.cpus = 0.5;
  CreateSpec create = build_create_spec(policy, spec);
  std::vector<std::string> args = cli_arguments(create, false);
  CHECK(args == build_run_arguments(policy, spec));
  json body =
      json::parse(docker_create(create, CreateInputs{k_client_env, no_files}).request->body);
  auto from_args = flags_in_args(args, create.image);
  auto from_body = flags_in_body(body, create.name);
  // The caller's variables pass by name to the client and by value in the body.
  for (auto& entry : from_args["env"]) {
    if (entry.find('=') == std::string::npos) {
      entry += "=" + (entry == "LANG" ? std::string("C.UTF-8") : "");
    }
  }
  std::erase(from_args["env"], "PYTHONPATH=");  // not in the client's environment: not passed
  for (auto* flags : {&from_args, &from_body}) {
    for (auto& [flag, values] : *flags) {
      if (flag != "env" && flag != "mount") {  // the body keeps labels by name, not in order
        std::sort(values.begin(), values.end());
      }
    }
  }
  CHECK(from_args == from_body);
  CHECK(body["Image"] == create.image);
  CHECK(body["Cmd"] == json(std::vector<std::string>(args.end() - 4, args.end())));
}

TEST_CASE("supplementary groups (a broker's git stage) reach the client, docker's API and podman's",
          "[engine_create]") {
  CreateSpec create = build_create_spec(Policy{}, sample_spec());
  create.group_add = {"996"};
  CHECK(has_arg(cli_arguments(create, false, k_client_env), "--group-add=996"));
  auto docker = docker_create(create, CreateInputs{k_client_env, no_files});
  REQUIRE(docker.request);
  CHECK(json::parse(docker.request->body)["HostConfig"]["GroupAdd"] == json::array({"996"}));
  auto podman = podman_create(create, CreateInputs{k_client_env, no_files});
  INFO(podman.unsupported);
  REQUIRE(podman.request);
  CHECK(json::parse(podman.request->body)["groups"] == json::array({"996"}));
}
