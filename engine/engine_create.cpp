#include "engine/engine_create.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string_view>

namespace sandshim::shim {

namespace {

using nlohmann::json;

// The create body while it is built, and what the flags said about the run itself.
struct Draft {
  json config = json::object();
  CreateRequest request;
  const std::vector<std::string>* client_env = nullptr;
  const ReadFile* read_file = nullptr;

  json& host() { return config["HostConfig"]; }
};

// Why a value cannot be carried; nullopt when it was.
using Problem = std::optional<std::string>;
using Setter = Problem (*)(Draft&, const std::string&);

Problem set_config(Draft& draft, const char* key, json value) {
  draft.config[key] = std::move(value);
  return std::nullopt;
}

Problem set_host(Draft& draft, const char* key, json value) {
  draft.host()[key] = std::move(value);
  return std::nullopt;
}

Problem add_host(Draft& draft, const char* key, const std::string& value) {
  draft.host()[key].push_back(value);
  return std::nullopt;
}

Problem set_name(Draft& draft, const std::string& value) {
  draft.request.name = value;
  return std::nullopt;
}

// The API never pulls: create answers 404 for an image that is not there.
Problem check_pull(Draft&, const std::string& value) {
  return value == "never" ? Problem{} : Problem{"a pull policy other than never"};
}

Problem set_log_driver(Draft& draft, const std::string& value) {
  return set_host(draft, "LogConfig", {{"Type", value}, {"Config", json::object()}});
}

// The run loop's --cidfile: the API client writes the id itself.
Problem ignore_cidfile(Draft&, const std::string&) {
  return std::nullopt;
}

std::optional<int64_t> integer(const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

Problem set_integer(json& field, const std::string& value) {
  auto parsed = integer(value);
  if (!parsed) {
    return "not a number of bytes or a count";
  }
  field = *parsed;
  return std::nullopt;
}

// `--cpus` as the client takes it: nano-CPUs, whole.
Problem set_cpus(Draft& draft, const std::string& value) {
  char* end = nullptr;
  double cpus = std::strtod(value.c_str(), &end);
  double nano = std::round(cpus * 1e9);
  if (end != value.c_str() + value.size() || !(cpus > 0) || std::abs(nano - cpus * 1e9) > 1e-3) {
    return "not a CPU count";
  }
  draft.host()["NanoCpus"] = static_cast<int64_t>(nano);
  return std::nullopt;
}

// NAME=VALUE, or NAME alone: its value from the client's environment, absent when it has none.
Problem add_env(Draft& draft, const std::string& value) {
  if (value.find('=') != std::string::npos) {
    draft.config["Env"].push_back(value);
    return std::nullopt;
  }
  for (const std::string& entry : *draft.client_env) {
    if (entry.size() > value.size() && entry.starts_with(value) && entry[value.size()] == '=') {
      draft.config["Env"].push_back(entry);
      break;
    }
  }
  return std::nullopt;
}

Problem add_label(Draft& draft, const std::string& value) {
  size_t eq = value.find('=');
  draft.config["Labels"][value.substr(0, eq)] = eq == std::string::npos ? "" : value.substr(eq + 1);
  return std::nullopt;
}

// seccomp=PATH becomes seccomp=<the profile's JSON, compact>, as the client sends it.
Problem add_security_opt(Draft& draft, const std::string& value) {
  if (value.starts_with("seccomp=") && value != "seccomp=unconfined") {
    auto content = (*draft.read_file)(value.substr(8));
    json profile = content ? json::parse(*content, nullptr, false) : json();
    if (profile.is_discarded() || !profile.is_object()) {
      return "the seccomp profile cannot be read as JSON";
    }
    draft.host()["SecurityOpt"].push_back("seccomp=" + profile.dump());
    return std::nullopt;
  }
  if (value != "no-new-privileges:true" && value != "no-new-privileges") {
    return "not a security option sandshim sets";
  }
  draft.host()["SecurityOpt"].push_back(value);
  return std::nullopt;
}

// /PATH:OPTIONS
Problem add_tmpfs(Draft& draft, const std::string& value) {
  size_t colon = value.find(':');
  draft.host()["Tmpfs"][value.substr(0, colon)] =
      colon == std::string::npos ? "" : value.substr(colon + 1);
  return std::nullopt;
}

// name=soft:hard
Problem add_ulimit(Draft& draft, const std::string& value) {
  size_t eq = value.find('=');
  size_t colon = value.find(':', eq);
  auto soft = integer(value.substr(eq + 1, colon - eq - 1));
  auto hard = integer(colon == std::string::npos ? "" : value.substr(colon + 1));
  if (eq == std::string::npos || !soft || !hard) {
    return "not name=soft:hard";
  }
  draft.host()["Ulimits"].push_back(
      json{{"Name", value.substr(0, eq)}, {"Soft", *soft}, {"Hard", *hard}});
  return std::nullopt;
}

// One key of a bind mount's CSV; false for a key the API path does not carry.
bool apply_mount_field(json& mount, const std::string& field) {
  size_t eq = field.find('=');
  std::string key = field.substr(0, eq);
  std::string value = eq == std::string::npos ? "" : field.substr(eq + 1);
  if (key == "type" && value == "bind") {
    mount["Type"] = "bind";
  } else if (key == "source" || key == "src") {
    mount["Source"] = value;
  } else if (key == "target" || key == "dst" || key == "destination") {
    mount["Target"] = value;
  } else if ((key == "readonly" || key == "ro") && (value.empty() || value == "true")) {
    mount["ReadOnly"] = true;
  } else {
    return false;
  }
  return true;
}

Problem add_mount(Draft& draft, const std::string& value) {
  json mount = {{"ReadOnly", false}};
  for (const std::string& field : split_csv_fields(value)) {
    if (!apply_mount_field(mount, field)) {
      return "the mount option " + field + " has no API form here";
    }
  }
  if (mount.value("Type", "") != "bind" || !mount.contains("Source") || !mount.contains("Target")) {
    return "not a bind mount with a source and a target";
  }
  draft.host()["Mounts"].push_back(mount);
  return std::nullopt;
}

// Lifecycle and stdio flags without a value.
Problem set_auto_remove(Draft& draft, const std::string&) {
  draft.host()["AutoRemove"] = true;
  draft.request.auto_remove = true;
  return std::nullopt;
}

Problem set_interactive(Draft& draft, const std::string&) {
  draft.config["AttachStdin"] = draft.config["OpenStdin"] = draft.config["StdinOnce"] = true;
  draft.request.interactive = true;
  return std::nullopt;
}

Problem set_tty(Draft& draft, const std::string&) {
  draft.config["Tty"] = true;
  draft.request.tty = true;
  return std::nullopt;
}

struct FlagRule {
  std::string_view name;
  bool takes_value;
  Setter set;
};

// Every flag build_run_arguments emits for docker, and what it is in the create body.
const FlagRule k_flag_rules[] = {
    {"name", true, set_name},
    {"hostname", true, [](Draft& d, const std::string& v) { return set_config(d, "Hostname", v); }},
    {"label", true, add_label},
    {"rm", false, set_auto_remove},
    {"init", false, [](Draft& d, const std::string&) { return set_host(d, "Init", true); }},
    {"pull", true, check_pull},
    {"log-driver", true, set_log_driver},
    {"network", true, [](Draft& d, const std::string& v) { return set_host(d, "NetworkMode", v); }},
    {"runtime", true, [](Draft& d, const std::string& v) { return set_host(d, "Runtime", v); }},
    {"cap-drop", true, [](Draft& d, const std::string& v) { return add_host(d, "CapDrop", v); }},
    {"security-opt", true, add_security_opt},
    {"user", true, [](Draft& d, const std::string& v) { return set_config(d, "User", v); }},
    {"read-only", false,
     [](Draft& d, const std::string&) { return set_host(d, "ReadonlyRootfs", true); }},
    {"tmpfs", true, add_tmpfs},
    {"shm-size", true,
     [](Draft& d, const std::string& v) { return set_integer(d.host()["ShmSize"], v); }},
    {"mount", true, add_mount},
    {"workdir", true,
     [](Draft& d, const std::string& v) { return set_config(d, "WorkingDir", v); }},
    {"memory", true,
     [](Draft& d, const std::string& v) { return set_integer(d.host()["Memory"], v); }},
    {"memory-swap", true,
     [](Draft& d, const std::string& v) { return set_integer(d.host()["MemorySwap"], v); }},
    {"cpus", true, set_cpus},
    {"cpuset-cpus", true,
     [](Draft& d, const std::string& v) { return set_host(d, "CpusetCpus", v); }},
    {"pids-limit", true,
     [](Draft& d, const std::string& v) { return set_integer(d.host()["PidsLimit"], v); }},
    {"ulimit", true, add_ulimit},
    {"env", true, add_env},
    {"interactive", false, set_interactive},
    {"tty", false, set_tty},
    {"entrypoint", true,
     [](Draft& d, const std::string& v) { return set_config(d, "Entrypoint", json::array({v})); }},
    {"cidfile", true, ignore_cidfile},
};

const FlagRule* rule_for(std::span<const FlagRule> rules, std::string_view name) {
  for (const FlagRule& rule : rules) {
    if (rule.name == name) {
      return &rule;
    }
  }
  return nullptr;
}

// One `--name=value` or `--name`; the problem names the argument.
Problem apply_flag(Draft& draft, const std::string& arg, std::span<const FlagRule> rules) {
  size_t eq = arg.find('=');
  std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  const FlagRule* rule = rule_for(rules, name);
  if (rule == nullptr || rule->takes_value != (eq != std::string::npos)) {
    return arg;
  }
  if (auto problem = rule->set(draft, eq == std::string::npos ? "" : arg.substr(eq + 1))) {
    return arg + " (" + *problem + ")";
  }
  return std::nullopt;
}

// podman's libpod create body (its SpecGenerator): the compat create cannot carry
// --read-only-tmpfs=false (it always mounts writable tmpfs on /run and /var/tmp), the init's
// path, --cgroups=enabled or a bind mount's noexec, so podman's runs create through libpod.
Problem set_spec(Draft& draft, const char* key, json value) {
  draft.config[key] = std::move(value);
  return std::nullopt;
}

Problem add_spec(Draft& draft, const char* key, const std::string& value) {
  draft.config[key].push_back(value);
  return std::nullopt;
}

Problem podman_name(Draft& draft, const std::string& value) {
  draft.request.name = value;
  return set_spec(draft, "name", value);
}

json& resources(Draft& draft, const char* group) {
  return draft.config["resource_limits"][group];
}

Problem set_resource(Draft& draft, const char* group, const char* key, const std::string& value) {
  return set_integer(resources(draft, group)[key], value);
}

Problem podman_label(Draft& draft, const std::string& value) {
  size_t eq = value.find('=');
  draft.config["labels"][value.substr(0, eq)] = eq == std::string::npos ? "" : value.substr(eq + 1);
  return std::nullopt;
}

// --rm: the API client removes the container once its wait returned, not podman's own removal,
// which may remove it before the wait (sent after start, see engine_run.cpp) is answered.
Problem podman_auto_remove(Draft& draft, const std::string&) {
  draft.request.auto_remove = false;
  return std::nullopt;
}

Problem podman_network(Draft& draft, const std::string& value) {
  if (value != "none" && value != "bridge") {
    return "a network other than none or bridge";
  }
  return set_spec(draft, "netns", {{"nsmode", value}});
}

Problem podman_security_opt(Draft& draft, const std::string& value) {
  if (value == "no-new-privileges:true" || value == "no-new-privileges") {
    return set_spec(draft, "no_new_privileges", true);
  }
  if (value.starts_with("seccomp=") && value != "seccomp=unconfined" &&
      (*draft.read_file)(value.substr(8))) {
    return set_spec(draft, "seccomp_profile_path", value.substr(8));  // the service reads it
  }
  return "not a security option sandshim sets, or an unreadable profile";
}

// --read-only-tmpfs=false is podman 4.3's libpod default; newer services read the field.
Problem podman_read_only_tmpfs(Draft& draft, const std::string& value) {
  if (value != "false") {
    return "writable tmpfs on a read-only root";
  }
  return set_spec(draft, "read_write_tmpfs", false);
}

Problem podman_cgroups(Draft& draft, const std::string& value) {
  if (value != "enabled") {
    return "a cgroups mode other than enabled";
  }
  return set_spec(draft, "cgroups_mode", value);
}

void add_spec_mount(Draft& draft, const std::string& type, const std::string& source,
                    const std::string& target, json options) {
  draft.config["mounts"].push_back(
      {{"destination", target}, {"type", type}, {"source", source}, {"options", options}});
}

// /PATH:OPTIONS as an OCI tmpfs mount.
Problem podman_tmpfs(Draft& draft, const std::string& value) {
  size_t colon = value.find(':');
  json options = json::array();
  if (colon != std::string::npos) {
    for (const std::string& option : split_csv_fields(value.substr(colon + 1))) {
      options.push_back(option);
    }
  }
  add_spec_mount(draft, "tmpfs", "tmpfs", value.substr(0, colon), options);
  return std::nullopt;
}

// One key of a bind mount's CSV into an OCI mount; false for a key the API path does not carry.
bool apply_spec_mount_field(json& mount, const std::string& field) {
  size_t eq = field.find('=');
  std::string key = field.substr(0, eq);
  std::string value = eq == std::string::npos ? "" : field.substr(eq + 1);
  if (key == "type" || key == "source" || key == "src" || key == "target" || key == "dst" ||
      key == "destination") {
    mount[key == "type" ? "type" : key.starts_with("s") ? "source" : "destination"] = value;
  } else if ((key == "readonly" || key == "ro") && (value.empty() || value == "true")) {
    mount["options"].push_back("ro");
  } else if (eq == std::string::npos && (key == "noexec" || key == "nosuid" || key == "nodev")) {
    mount["options"].push_back(key);
  } else {
    return false;
  }
  return true;
}

// type=bind,source=…,target=…[,readonly][,noexec,nosuid,nodev] as an OCI bind mount.
Problem podman_mount(Draft& draft, const std::string& value) {
  json mount = {{"options", json::array({"rbind"})}};
  for (const std::string& field : split_csv_fields(value)) {
    if (!apply_spec_mount_field(mount, field)) {
      return "the mount option " + field + " has no API form here";
    }
  }
  if (mount.value("type", "") != "bind" || mount.value("source", "").empty() ||
      mount.value("destination", "").empty()) {
    return "not a bind mount with a source and a target";
  }
  add_spec_mount(draft, "bind", mount["source"], mount["destination"], mount["options"]);
  return std::nullopt;
}

// `--cpus` as podman's client takes it: a quota over a 100 ms period.
Problem podman_cpus(Draft& draft, const std::string& value) {
  char* end = nullptr;
  double cpus = std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size() || !(cpus > 0)) {
    return "not a CPU count";
  }
  constexpr int64_t k_period_us = 100000;
  resources(draft, "cpu")["period"] = k_period_us;
  resources(draft, "cpu")["quota"] = static_cast<int64_t>(std::llround(cpus * k_period_us));
  return std::nullopt;
}

Problem podman_cpuset(Draft& draft, const std::string& value) {
  resources(draft, "cpu")["cpus"] = value;
  return std::nullopt;
}

Problem podman_ulimit(Draft& draft, const std::string& value) {
  Draft probe;
  if (auto problem = add_ulimit(probe, value)) {
    return problem;
  }
  const json& limit = probe.host()["Ulimits"][0];
  draft.config["r_limits"].push_back(
      {{"type", limit["Name"]}, {"soft", limit["Soft"]}, {"hard", limit["Hard"]}});
  return std::nullopt;
}

// NAME=VALUE, or NAME alone with its value from the client's environment.
Problem podman_env(Draft& draft, const std::string& value) {
  Draft probe;
  probe.config["Env"] = json::array();
  probe.client_env = draft.client_env;
  add_env(probe, value);
  for (const auto& entry : probe.config["Env"]) {
    std::string text = entry.get<std::string>();
    size_t eq = text.find('=');
    draft.config["env"][text.substr(0, eq)] = text.substr(eq + 1);
  }
  return std::nullopt;
}

Problem podman_interactive(Draft& draft, const std::string&) {
  draft.request.interactive = true;
  return set_spec(draft, "stdin", true);
}

Problem podman_tty(Draft& draft, const std::string&) {
  draft.request.tty = true;
  return set_spec(draft, "terminal", true);
}

// Every flag build_run_arguments emits for podman, and its SpecGenerator field.
const FlagRule k_podman_rules[] = {
    {"name", true, podman_name},
    {"hostname", true, [](Draft& d, const std::string& v) { return set_spec(d, "hostname", v); }},
    {"label", true, podman_label},
    {"rm", false, podman_auto_remove},
    {"init", false, [](Draft& d, const std::string&) { return set_spec(d, "init", true); }},
    {"init-path", true, [](Draft& d, const std::string& v) { return set_spec(d, "init_path", v); }},
    {"pull", true, check_pull},
    {"log-driver", true,
     [](Draft& d, const std::string& v) {
       return set_spec(d, "log_configuration", {{"driver", v}});
     }},
    {"network", true, podman_network},
    {"cap-drop", true, [](Draft& d, const std::string& v) { return add_spec(d, "cap_drop", v); }},
    {"security-opt", true, podman_security_opt},
    {"user", true, [](Draft& d, const std::string& v) { return set_spec(d, "user", v); }},
    {"read-only", false,
     [](Draft& d, const std::string&) { return set_spec(d, "read_only_filesystem", true); }},
    {"read-only-tmpfs", true, podman_read_only_tmpfs},
    {"tmpfs", true, podman_tmpfs},
    {"shm-size", true,
     [](Draft& d, const std::string& v) { return set_integer(d.config["shm_size"], v); }},
    {"mount", true, podman_mount},
    {"workdir", true, [](Draft& d, const std::string& v) { return set_spec(d, "work_dir", v); }},
    {"cgroups", true, podman_cgroups},
    {"memory", true,
     [](Draft& d, const std::string& v) { return set_resource(d, "memory", "limit", v); }},
    {"memory-swap", true,
     [](Draft& d, const std::string& v) { return set_resource(d, "memory", "swap", v); }},
    {"cpus", true, podman_cpus},
    {"cpuset-cpus", true, podman_cpuset},
    {"pids-limit", true,
     [](Draft& d, const std::string& v) { return set_resource(d, "pids", "limit", v); }},
    {"ulimit", true, podman_ulimit},
    {"env", true, podman_env},
    {"unsetenv", true, [](Draft& d, const std::string& v) { return add_spec(d, "unsetenv", v); }},
    {"interactive", false, podman_interactive},
    {"tty", false, podman_tty},
    {"entrypoint", true,
     [](Draft& d, const std::string& v) { return set_spec(d, "entrypoint", json::array({v})); }},
    {"cidfile", true, ignore_cidfile},
};

// What `docker run` sets for a container it attaches to, before any flag.
json base_config() {
  return {{"AttachStdin", false}, {"AttachStdout", true},     {"AttachStderr", true},
          {"OpenStdin", false},   {"StdinOnce", false},       {"Tty", false},
          {"Env", json::array()}, {"Labels", json::object()}, {"HostConfig", json::object()}};
}

}  // namespace

std::vector<std::string> split_csv_fields(const std::string& value) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '"' && quoted && i + 1 < value.size() && value[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

namespace {

// The flags of a `run` argument list through `rules`, then its image and command as `finish`
// places them; the first flag with no rule, or no image or name, leaves the run to the client.
using Finish = void (*)(json& config, const std::string& image, std::vector<std::string> command);

CreateTranslation translate_with(const std::vector<std::string>& args,
                                 const std::vector<std::string>& client_env,
                                 const ReadFile& read_file, std::span<const FlagRule> rules,
                                 json base, Finish finish) {
  if (args.empty() || args.front() != "run") {
    return {std::nullopt, args.empty() ? "(nothing)" : args.front()};
  }
  Draft draft;
  draft.config = std::move(base);
  draft.client_env = &client_env;
  draft.read_file = &read_file;
  size_t i = 1;
  for (; i < args.size() && args[i].starts_with("--"); ++i) {
    if (auto problem = apply_flag(draft, args[i], rules)) {
      return {std::nullopt, *problem};
    }
  }
  if (i == args.size() || draft.request.name.empty()) {
    return {std::nullopt, "no image or no --name"};
  }
  finish(draft.config, args[i],
         std::vector<std::string>(args.begin() + static_cast<long>(i) + 1, args.end()));
  draft.request.body = draft.config.dump();
  return {std::move(draft.request), ""};
}

void finish_docker(json& config, const std::string& image, std::vector<std::string> command) {
  config["Image"] = image;
  if (!command.empty()) {
    config["Cmd"] = std::move(command);
  }
}

void finish_podman(json& config, const std::string& image, std::vector<std::string> command) {
  config["image"] = image;
  if (!command.empty()) {
    config["command"] = std::move(command);
  }
}

}  // namespace

std::optional<std::string> read_named_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? std::optional(text.str()) : std::nullopt;
}

CreateTranslation translate_run_arguments(const std::vector<std::string>& args,
                                          const std::vector<std::string>& client_env,
                                          const ReadFile& read_file) {
  return translate_with(args, client_env, read_file, k_flag_rules, base_config(), finish_docker);
}

CreateTranslation translate_podman_run_arguments(const std::vector<std::string>& args,
                                                 const std::vector<std::string>& client_env,
                                                 const ReadFile& read_file) {
  CreateTranslation translation =
      translate_with(args, client_env, read_file, k_podman_rules, json::object(), finish_podman);
  if (translation.request) {
    translation.request->libpod = true;
  }
  return translation;
}

}  // namespace sandshim::shim
