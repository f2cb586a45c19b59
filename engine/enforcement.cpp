#include "engine/enforcement.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "engine/engine_api.hpp"
#include "engine/engine_client.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json parse_object(const std::string& text, const std::string& what) {
  json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_object()) {
    throw Fatal("cannot read the engine's " + what + ": not a JSON object");
  }
  return parsed;
}

// A value of the expected type at `path` (a JSON pointer), or the fallback: engines differ in
// which fields they fill, and a missing one must read as "not enforced", never crash.
template <typename T>
T value_at(const json& document, const std::string& path, T fallback) {
  json::json_pointer pointer(path);
  if (!document.contains(pointer)) {
    return fallback;
  }
  const json& value = document.at(pointer);
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean() ? value.get<bool>() : fallback;
  } else {
    return value.is_string() ? value.get<std::string>() : fallback;
  }
}

std::vector<std::string> strings_at(const json& document, const std::string& path) {
  std::vector<std::string> result;
  json::json_pointer pointer(path);
  if (document.contains(pointer) && document.at(pointer).is_array()) {
    for (const auto& item : document.at(pointer)) {
      if (item.is_string()) {
        result.push_back(item.get<std::string>());
      }
    }
  }
  return result;
}

bool contains(const std::vector<std::string>& list, const std::string& word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// Docker's SecurityOptions: "name=seccomp,profile=default", "name=rootless", "name=apparmor".
std::vector<std::string> docker_security_names(const json& info) {
  std::vector<std::string> names;
  for (const auto& option : strings_at(info, "/SecurityOptions")) {
    std::string first = option.substr(0, option.find(','));
    if (first.starts_with("name=")) {
      names.push_back(first.substr(5));
    }
  }
  return names;
}

std::string without_v(const std::string& version) {
  return version.starts_with("v") ? version.substr(1) : version;
}

std::string join_names(const std::vector<std::string>& names) {
  if (names.size() <= 1) {
    return names.empty() ? "" : names.front();
  }
  std::vector<std::string> head(names.begin(), names.end() - 1);
  return join(head, ", ") + " and " + names.back();
}

// Why limits are missing, then the fix, from the facts that explain it.
std::string missing_reason(const EngineFacts& facts, const std::vector<std::string>& missing) {
  if (facts.rootless && facts.cgroup_version == "1") {
    return "rootless " + facts.kind +
           " on cgroup v1 ignores resource limits; use a rootful engine, or a cgroup v2 host "
           "(systemd.unified_cgroup_hierarchy=1) with the controllers delegated";
  }
  if (facts.cgroup_driver == "none") {
    return facts.kind + " runs without cgroups; configure a cgroup driver for it";
  }
  if (facts.rootless) {
    return "the " + join_names(missing) + " controllers are not delegated to rootless " +
           facts.kind + "; delegate them (systemd: `Delegate=cpu cpuset io memory pids` for " +
           "user@.service) and log in again";
  }
  return "the host's cgroups lack " + join_names(missing) +
         "; enable them (`swapaccount=1` and `cgroup_enable=memory` on the kernel command line)";
}

EngineFacts fill_from_json(const json& cached) {
  EngineFacts facts;
  facts.kind = value_at<std::string>(cached, "/kind", "");
  facts.server_version = value_at<std::string>(cached, "/server_version", "");
  facts.cgroup_version = value_at<std::string>(cached, "/cgroup_version", "");
  facts.cgroup_driver = value_at<std::string>(cached, "/cgroup_driver", "");
  facts.runtime = value_at<std::string>(cached, "/runtime", "");
  facts.engine_id = value_at<std::string>(cached, "/engine_id", "");
  facts.rootless = value_at(cached, "/rootless", false);
  facts.seccomp = value_at(cached, "/seccomp", false);
  facts.apparmor = value_at(cached, "/apparmor", false);
  facts.selinux = value_at(cached, "/selinux", false);
  facts.memory = value_at(cached, "/memory", false);
  facts.swap = value_at(cached, "/swap", false);
  facts.cpu = value_at(cached, "/cpu", false);
  facts.pids = value_at(cached, "/pids", false);
  facts.cpuset = value_at(cached, "/cpuset", false);
  facts.warnings = strings_at(cached, "/warnings");
  return facts;
}

}  // namespace

EngineFacts parse_docker_info(const std::string& text) {
  json info = parse_object(text, "`docker info`");
  EngineFacts facts;
  facts.kind = "docker";
  facts.server_version = value_at<std::string>(info, "/ServerVersion", "");
  if (facts.server_version.empty()) {
    throw EngineInfoError("the Docker daemon did not answer `docker info`");
  }
  facts.engine_id = value_at<std::string>(info, "/ID", "");
  facts.cgroup_version = value_at<std::string>(info, "/CgroupVersion", "");
  facts.cgroup_driver = value_at<std::string>(info, "/CgroupDriver", "");
  facts.runtime = value_at<std::string>(info, "/DefaultRuntime", "");
  auto security = docker_security_names(info);
  facts.rootless = contains(security, "rootless");
  facts.seccomp = contains(security, "seccomp");
  facts.apparmor = contains(security, "apparmor");
  facts.selinux = contains(security, "selinux");
  facts.memory = value_at(info, "/MemoryLimit", false);
  facts.swap = value_at(info, "/SwapLimit", false);
  facts.cpu = value_at(info, "/CpuCfsQuota", false) && value_at(info, "/CpuCfsPeriod", false);
  facts.pids = value_at(info, "/PidsLimit", false);
  facts.cpuset = value_at(info, "/CPUSet", false);
  facts.warnings = strings_at(info, "/Warnings");
  return facts;
}

EngineFacts parse_podman_info(const std::string& text) {
  json info = parse_object(text, "`podman info`");
  EngineFacts facts;
  facts.kind = "podman";
  facts.server_version = value_at<std::string>(info, "/version/Version", "");
  facts.cgroup_version = without_v(value_at<std::string>(info, "/host/cgroupVersion", ""));
  facts.cgroup_driver = value_at<std::string>(info, "/host/cgroupManager", "");
  facts.runtime = value_at<std::string>(info, "/host/ociRuntime/name", "");
  facts.rootless = value_at(info, "/host/security/rootless", false);
  facts.seccomp = value_at(info, "/host/security/seccompEnabled", false);
  facts.apparmor = value_at(info, "/host/security/apparmorEnabled", false);
  facts.selinux = value_at(info, "/host/security/selinuxEnabled", false);
  bool listed = info.contains(json::json_pointer("/host/cgroupControllers"));
  auto controllers = strings_at(info, "/host/cgroupControllers");
  // Podman before 3.2 lists no controllers: a rootful engine on cgroup v1 has them all; anything
  // else unknown counts as missing (fail closed).
  auto has = [&](const std::string& name) {
    return listed ? contains(controllers, name) : !facts.rootless && facts.cgroup_version == "1";
  };
  bool cgroups_apply = !(facts.rootless && facts.cgroup_version == "1");
  facts.memory = cgroups_apply && has("memory");
  facts.swap = facts.memory;  // podman does not report swap accounting apart
  facts.cpu = cgroups_apply && has("cpu");
  facts.pids = cgroups_apply && has("pids");
  facts.cpuset = cgroups_apply && has("cpuset");
  return facts;
}

std::string facts_to_json(const EngineFacts& facts) {
  json out = {{"kind", facts.kind},
              {"server_version", facts.server_version},
              {"cgroup_version", facts.cgroup_version},
              {"cgroup_driver", facts.cgroup_driver},
              {"runtime", facts.runtime},
              {"engine_id", facts.engine_id},
              {"rootless", facts.rootless},
              {"seccomp", facts.seccomp},
              {"apparmor", facts.apparmor},
              {"selinux", facts.selinux},
              {"memory", facts.memory},
              {"swap", facts.swap},
              {"cpu", facts.cpu},
              {"pids", facts.pids},
              {"cpuset", facts.cpuset},
              {"warnings", facts.warnings}};
  return out.dump();
}

EngineFacts facts_from_json(const std::string& text) {
  return fill_from_json(parse_object(text, "cached facts"));
}

Enforcement assess_enforcement(const EngineFacts& facts) {
  // Rootless engines on cgroup v1 accept the flags and drop them, whatever else they report.
  bool cgroups_apply = !(facts.rootless && facts.cgroup_version == "1");
  const std::pair<const char*, bool> limits[] = {
      {"memory", facts.memory}, {"swap", facts.swap}, {"cpus", facts.cpu}, {"pids", facts.pids}};
  Enforcement result;
  for (const auto& [name, supported] : limits) {
    (supported && cgroups_apply ? result.enforced : result.unenforced).emplace_back(name);
  }
  if (!result.unenforced.empty()) {
    result.reason = missing_reason(facts, result.unenforced);
  }
  return result;
}

std::string describe_enforcement(const Enforcement& enforcement) {
  std::string text = "enforced=" + join(enforcement.enforced, ",");
  if (!enforcement.unenforced.empty()) {
    text += " unenforced=" + join(enforcement.unenforced, ",");
  }
  return text;
}

std::string refusal_message(const EngineFacts& facts, const Enforcement& enforcement) {
  return facts.kind + " cannot enforce the " + join_names(enforcement.unenforced) + " limit" +
         (enforcement.unenforced.size() == 1 ? "" : "s") + ": " + enforcement.reason +
         "; or set limits.unenforced = accept to run without them";
}

// ---------------------------------------------------------------------------------------------
// Probing and caching.

namespace {

bool is_remote(const Engine& engine) {
  return !engine.endpoint.empty() && !engine.endpoint.starts_with("unix://");
}

// dev:inode:ctime:mtime:size of a file, or "absent": a recreated socket, a restarted daemon's
// new pid file or a replaced client binary all change it.
std::string file_identity(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return path.string() + "=absent";
  }
  std::ostringstream out;
  out << path.string() << "=" << st.st_dev << ":" << st.st_ino << ":" << st.st_ctim.tv_sec << "."
      << st.st_ctim.tv_nsec << ":" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec << ":"
      << st.st_size;
  return out.str();
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// The files whose identity changes when the local engine does.
std::vector<fs::path> engine_identity_files(const Engine& engine) {
  std::vector<fs::path> files = {engine.client};
  if (is_remote(engine)) {
    return files;  // nothing local identifies a remote engine: the short age limit applies
  }
  if (engine.kind == "docker") {
    fs::path socket = engine.endpoint.starts_with("unix://") ? fs::path(engine.endpoint.substr(7))
                                                             : fs::path("/var/run/docker.sock");
    files.push_back(socket);
    files.push_back(socket.parent_path() / "docker.pid");  // rewritten by every daemon start
  } else {
    files.push_back("/usr/share/containers/containers.conf");
    files.push_back("/etc/containers/containers.conf");
    files.push_back(home_directory() / ".config" / "containers" / "containers.conf");
  }
  return files;
}

std::string cache_name(const std::string& identity) {
  std::ostringstream out;
  out << std::hex << std::hash<std::string>{}(identity) << ".json";
  return out.str();
}

std::optional<EngineFacts> read_cached(const fs::path& file, const std::string& identity,
                                       std::chrono::seconds ttl) {
  std::ifstream in(file);
  if (!in) {
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  json entry = json::parse(text.str(), nullptr, false);
  if (!entry.is_object() || value_at<std::string>(entry, "/identity", "") != identity ||
      !entry.contains("written_ms") || !entry["written_ms"].is_number_integer() ||
      !entry.contains("facts") || !entry["facts"].is_object()) {
    return std::nullopt;
  }
  int64_t age_ms = wall_clock_ms() - entry["written_ms"].get<int64_t>();
  if (age_ms < 0 || age_ms >= std::chrono::milliseconds(ttl).count()) {
    return std::nullopt;
  }
  return fill_from_json(entry["facts"]);
}

// Best effort: a cache that cannot be written only costs the next run another probe.
void write_cached(const fs::path& file, const std::string& identity, const EngineFacts& facts) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  ::chmod(file.parent_path().c_str(), 0700);
  json entry = {{"identity", identity},
                {"written_ms", wall_clock_ms()},
                {"facts", json::parse(facts_to_json(facts))}};
  fs::path temporary = file.string() + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << entry.dump() << "\n";
    if (!out) {
      fs::remove(temporary, ec);
      return;
    }
  }
  fs::rename(temporary, file, ec);
  if (ec) {
    fs::remove(temporary, ec);
  }
}

}  // namespace

FactsCache default_facts_cache() {
  return {xdg_directory("state") / "sandshim" / "engine-facts", std::chrono::seconds(3600),
          std::chrono::seconds(60)};
}

std::string engine_identity(const Engine& engine) {
  std::string identity = "v1 " + engine.kind + " endpoint=" + engine.endpoint +
                         " uid=" + std::to_string(::getuid()) + " boot=" + boot_id();
  for (const auto& file : engine_identity_files(engine)) {
    // Two appends, not `" " + file_identity(file)`: GCC 12 at -O3 warns a false -Wrestrict in
    // that operator+'s insert (GCC bug 105651), which -Werror makes a failed Release build.
    identity += ' ';
    identity += file_identity(file);
  }
  return identity;
}

namespace {

// An ssh:// engine's `info` comes through the API (the same document as the client's
// `{{json .}}`): docker's client would start an ssh of its own, steered by ~/.ssh/config. Its
// failure is ssh's own line (ssh_connect.hpp), never read back as a client's error text.
std::optional<EngineReply> info_over_ssh(const Engine& engine) {
  auto transport = engine_api_transport(engine);
  if (!transport || !std::holds_alternative<engine::SshEndpoint>(*transport)) {
    return std::nullopt;
  }
  engine::Reply reply = engine::ApiClient(*transport, EngineClient::k_default_timeout).info();
  if (!reply.ok()) {
    throw Fatal(engine.describe() + " does not answer: " + reply.describe());
  }
  return EngineReply{true, 0, reply.body, ""};
}

}  // namespace

EngineFacts probe_engine_facts(const Engine& engine) {
  std::optional<EngineReply> over_ssh = info_over_ssh(engine);
  EngineReply reply = over_ssh ? std::move(*over_ssh) : EngineClient(engine).info();
  if (!reply.answered) {
    throw EngineInfoError(engine.kind + " info did not answer within 30 s");
  }
  if (reply.code != 0) {
    std::string reason = trim(reply.err);
    throw EngineInfoError(reason.empty() ? engine.kind + " info failed" : reason);
  }
  return engine.kind == "podman" ? parse_podman_info(reply.out) : parse_docker_info(reply.out);
}

EngineFacts engine_facts(const Engine& engine, const FactsCache& cache) {
  std::string identity = engine_identity(engine);
  fs::path file = cache.file / cache_name(identity);
  auto ttl = is_remote(engine) ? cache.remote_ttl : cache.local_ttl;
  if (auto cached = read_cached(file, identity, ttl)) {
    return *cached;
  }
  EngineFacts facts = probe_engine_facts(engine);
  write_cached(file, identity, facts);
  return facts;
}

}  // namespace sandshim::shim
