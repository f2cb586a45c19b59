#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "common/error.hpp"
#include "install/container_checks.hpp"

using namespace sandshim::install;
using nlohmann::json;

namespace {

// Recorded `docker inspect` output (host paths and ids replaced).
json recorded(const std::string& name) {
  std::ifstream in(std::string(SANDSHIM_TEST_DATA_DIR) + "/container_inspect/" + name);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::map<std::string, std::string> statuses(const ContainerReport& report) {
  std::map<std::string, std::string> result;
  for (const auto& check : report.checks) {
    result[check.id] = check.status;
  }
  return result;
}

std::string status_of(const json& container, const std::string& id, HostSecurity host = {}) {
  return statuses(check_container(container, host)).at(id);
}

}  // namespace

TEST_CASE("a default sandshim container passes every check that applies", "[containers]") {
  auto reports = check_containers(recorded("sandshim_default.json").dump(), {});
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].name == "sandshim-0123456789abcdef");
  CHECK(reports[0].id == "0123456789ab");
  for (const auto& check : reports[0].checks) {
    INFO(check.id << " " << check.title << ": " << check.detail);
    if (check.id == "5.1" || check.id == "5.2") {
      CHECK(check.status == "n/a");  // no AppArmor or SELinux on the recording host
    } else {
      CHECK(check.status == "pass");
    }
  }
  CHECK(reports[0].passed());
}

TEST_CASE("a privileged container with the engine socket fails", "[containers]") {
  ContainerReport report = check_container(recorded("privileged_socket.json")[0], {});
  auto status = statuses(report);
  CHECK_FALSE(report.passed());
  for (const char* id : {"4.1", "5.3", "5.4", "5.10", "5.11", "5.12", "5.25", "5.28", "5.31"}) {
    INFO(id);
    CHECK(status.at(id) == "fail");
  }
  CHECK(status.at("5.9") == "pass");  // --network none
  CHECK(status.at("5.29") == "pass");
}

TEST_CASE("each check fails on the setting it names", "[containers]") {
  json good = recorded("sandshim_default.json")[0];
  auto with = [&](const std::string& pointer, const json& value) {
    json changed = good;
    changed[json::json_pointer(pointer)] = value;
    return changed;
  };
  CHECK(status_of(with("/Config/User", ""), "4.1") == "fail");
  CHECK(status_of(with("/Config/User", "0:0"), "4.1") == "fail");
  CHECK(status_of(with("/Config/User", "root"), "4.1") == "fail");
  CHECK(status_of(with("/HostConfig/CapAdd", json::array({"NET_ADMIN"})), "5.3") == "fail");
  CHECK(status_of(with("/HostConfig/CapDrop", json::array({"NET_RAW"})), "5.3") == "fail");
  CHECK(status_of(with("/HostConfig/Privileged", true), "5.4") == "fail");
  CHECK(status_of(with("/Mounts/0/Source", "/etc"), "5.5") == "fail");
  CHECK(status_of(with("/Mounts/0/Source", "/"), "5.5") == "fail");
  CHECK(status_of(with("/Mounts/0/Source", "/usr/lib"), "5.5") == "fail");
  CHECK(status_of(with("/Mounts/0/Source", "/etcetera"), "5.5") == "pass");
  json ports = {{"80/tcp", json::array({{{"HostIp", ""}, {"HostPort", "80"}}})}};
  CHECK(status_of(with("/HostConfig/PortBindings", ports), "5.7") == "fail");
  CHECK(status_of(with("/HostConfig/PortBindings", ports), "5.13") == "fail");
  json local = {{"8080/tcp", json::array({{{"HostIp", "127.0.0.1"}, {"HostPort", "8080"}}})}};
  CHECK(status_of(with("/HostConfig/PortBindings", local), "5.7") == "pass");
  CHECK(status_of(with("/HostConfig/PortBindings", local), "5.13") == "pass");
  CHECK(status_of(with("/HostConfig/NetworkMode", "host"), "5.9") == "fail");
  CHECK(status_of(with("/HostConfig/Memory", 0), "5.10") == "fail");
  CHECK(status_of(with("/HostConfig/NanoCpus", 0), "5.11") == "fail");
  CHECK(status_of(with("/HostConfig/ReadonlyRootfs", false), "5.12") == "fail");
  CHECK(status_of(with("/HostConfig/RestartPolicy", {{"Name", "always"}}), "5.14") == "fail");
  CHECK(status_of(
            with("/HostConfig/RestartPolicy", {{"Name", "on-failure"}, {"MaximumRetryCount", 5}}),
            "5.14") == "pass");
  CHECK(status_of(with("/HostConfig/PidMode", "host"), "5.15") == "fail");
  CHECK(status_of(with("/HostConfig/IpcMode", "host"), "5.16") == "fail");
  json device = json::array({{{"PathOnHost", "/dev/kvm"}}});
  CHECK(status_of(with("/HostConfig/Devices", device), "5.17") == "fail");
  CHECK(status_of(with("/HostConfig/Ulimits", nullptr), "5.18") == "warn");
  CHECK(status_of(with("/Mounts/0/Propagation", "rshared"), "5.19") == "fail");
  CHECK(status_of(with("/HostConfig/UTSMode", "host"), "5.20") == "fail");
  json unconfined = json::array({"no-new-privileges:true", "seccomp=unconfined"});
  CHECK(status_of(with("/HostConfig/SecurityOpt", unconfined), "5.21") == "fail");
  CHECK(status_of(with("/HostConfig/CgroupParent", "/custom"), "5.24") == "warn");
  CHECK(status_of(with("/HostConfig/SecurityOpt", json::array()), "5.25") == "fail");
  CHECK(status_of(with("/HostConfig/PidsLimit", nullptr), "5.28") == "fail");
  CHECK(status_of(with("/HostConfig/PidsLimit", -1), "5.28") == "fail");
  CHECK(status_of(with("/HostConfig/NetworkMode", "bridge"), "5.29") == "fail");
  CHECK(status_of(with("/HostConfig/NetworkMode", "default"), "5.29") == "fail");
  CHECK(status_of(with("/HostConfig/UsernsMode", "host"), "5.30") == "fail");
  CHECK(status_of(with("/Mounts/0/Source", "/run/podman/podman.sock"), "5.31") == "fail");
}

TEST_CASE("AppArmor and SELinux apply only where the host has them", "[containers]") {
  json good = recorded("sandshim_default.json")[0];
  HostSecurity apparmor{true, false};
  CHECK(status_of(good, "5.1", apparmor) == "fail");  // recorded without a profile
  good["AppArmorProfile"] = "docker-default";
  CHECK(status_of(good, "5.1", apparmor) == "pass");
  good["AppArmorProfile"] = "unconfined";
  CHECK(status_of(good, "5.1", apparmor) == "fail");
  HostSecurity selinux{false, true};
  CHECK(status_of(good, "5.2", selinux) == "fail");
  good["ProcessLabel"] = "system_u:system_r:container_t:s0:c1,c2";
  CHECK(status_of(good, "5.2", selinux) == "pass");
}

TEST_CASE("inspect output that is not an array is an error; odd fields are not", "[containers]") {
  CHECK_THROWS_AS(check_containers("{}", {}), sandshim::Fatal);
  CHECK_THROWS_AS(check_containers("garbage", {}), sandshim::Fatal);
  auto reports = check_containers(R"([{"HostConfig": {"Memory": "lots", "CapAdd": [1]}}])", {});
  REQUIRE(reports.size() == 1);
  CHECK_FALSE(reports[0].passed());
  CHECK(check_containers("[]", {}).empty());
}
