#include "engine/engine.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

// podman's --read-only leaves writable tmpfs on /run and /var/tmp unless told not to; a
// containers.conf with `cgroups = "disabled"` would silently drop every limit; podman sets
// TERM=xterm even with no terminal, where docker sets nothing.
void EngineDialect::complete(CreateSpec& spec) const {
  if (!is_podman()) {
    return;
  }
  if (spec.init) {
    spec.init_path = init_path;
  }
  if (spec.read_only_rootfs) {
    spec.read_only_tmpfs = false;
  }
  spec.cgroups = "enabled";
  bool term_passed = spec.tty || std::any_of(spec.env.begin(), spec.env.end(),
                                             [](const EnvVar& var) { return var.name == "TERM"; });
  if (!term_passed) {
    spec.unset_env.push_back("TERM");
  }
}

std::string EngineDialect::label_format(const std::string& label) const {
  return is_podman() ? "{{index .Labels \"" + label + "\"}}" : "{{.Label \"" + label + "\"}}";
}

std::vector<std::string> EngineDialect::remove_arguments(const std::string& name) const {
  if (is_podman()) {
    return {"rm", "--force", "--time=0", name};
  }
  return {"rm", "--force", name};
}

std::string EngineDialect::event_format() const {
  return is_podman() ? "{{.Status}}" : "{{.Action}}";
}

std::string EngineDialect::normalize_image_id(const std::string& id) const {
  return id.empty() || id.find(':') != std::string::npos ? id : "sha256:" + id;
}

std::string EngineDialect::info_command() const {
  return "`" + kind + " info`";
}

std::string EngineDialect::start_hint() const {
  return is_podman()
             ? "the podman service does not answer: start it (`podman system service`) or check "
               "engine.endpoint"
             : "the engine is not running: start it (`sudo systemctl start docker`, or "
               "install/setup.sh)";
}

std::string EngineDialect::permission_hint() const {
  return is_podman() ? "podman may not use its storage or runtime as this user: check `podman info`"
                     : "you may not use the engine socket: `sudo usermod -aG docker $USER`, then "
                       "log in again";
}

EngineDialect make_dialect(const std::string& kind, const std::string& search_path) {
  EngineDialect dialect;
  dialect.kind = kind;
  if (dialect.is_podman()) {
    auto init = find_in_path("tini-static", search_path, [](const fs::path&) { return false; });
    dialect.init_path = init ? init->string() : "";
  }
  return dialect;
}

std::string resolve_engine_kind(const std::string& name, const std::string& engine_path,
                                const std::string& search_path,
                                const std::function<bool(const fs::path&)>& skip) {
  if (name != "auto") {
    return name;
  }
  if (!engine_path.empty()) {
    return fs::path(engine_path).filename().string().starts_with("podman") ? "podman" : "docker";
  }
  return find_in_path("docker", search_path, skip) ? "docker" : "podman";
}

std::vector<std::string> Engine::remove_command(const std::string& name) const {
  std::vector<std::string> argv = {client.string()};
  auto remove = dialect.remove_arguments(name);
  argv.insert(argv.end(), remove.begin(), remove.end());
  return argv;
}

std::string Engine::describe() const {
  return endpoint.empty() ? kind : kind + "@" + endpoint;
}

std::vector<std::string> Engine::env_with(
    const std::vector<std::pair<std::string, std::string>>& passed) const {
  std::vector<std::string> result = env;
  for (const auto& [name, value] : passed) {
    result.push_back(name + "=" + value);
  }
  return result;
}

fs::path engine_config_dir() {
  fs::path dir = xdg_directory("state") / "sandshim" / "engine-config";
  std::error_code ec;
  if (!fs::exists(dir / "config.json", ec)) {
    fs::create_directories(dir, ec);
    ::chmod(dir.c_str(), 0700);
    std::ofstream(dir / "config.json") << "{}\n";
  }
  return dir;
}

std::vector<std::string> engine_environment(const Policy& policy) {
  return engine_environment(
      policy, resolve_engine_kind(policy.engine, policy.engine_path, policy.engine_search_path));
}

std::vector<std::string> engine_environment(const Policy& policy, const std::string& kind) {
  std::vector<std::string> env = {"PATH=" + policy.engine_search_path,
                                  "HOME=" + home_directory().string(), "LANG=C.UTF-8"};
  if (kind == "docker") {
    env.push_back("DOCKER_CONFIG=" + engine_config_dir().string());
    if (!policy.endpoint.empty()) {
      env.push_back("DOCKER_HOST=" + policy.endpoint);
    }
    if (policy.endpoint.starts_with("ssh://")) {
      // Where docker's client starts an ssh of its own (doctor's checks), it still never asks:
      // every question goes to an askpass that says no (OpenSSH 8.4+).
      env.insert(env.end(), {"SSH_ASKPASS=/bin/false", "SSH_ASKPASS_REQUIRE=force"});
    }
    if (!policy.tls_cert_path.empty()) {
      env.push_back("DOCKER_TLS_VERIFY=1");
      env.push_back("DOCKER_CERT_PATH=" + policy.tls_cert_path);
    }
  } else {
    if (!policy.endpoint.empty()) {
      env.push_back("CONTAINER_HOST=" + policy.endpoint);
    }
    for (const char* name : {"XDG_RUNTIME_DIR", "USER", "LOGNAME"}) {
      if (auto value = environment::text(name)) {
        env.push_back(std::string(name) + "=" + *value);
      }
    }
  }
  return env;
}

namespace {

// engine.path when it is an executable that is not sandshim itself.
std::optional<fs::path> usable_engine_path(
    const std::string& engine_path, const std::function<bool(const fs::path&)>& is_sandshim) {
  if (::access(engine_path.c_str(), X_OK) == 0 && !is_sandshim(engine_path)) {
    return fs::path(engine_path);
  }
  return std::nullopt;
}

// An unauthenticated TCP engine is root for anyone who reaches it.
void require_tls_for_tcp(const Policy& policy) {
  if (policy.endpoint.starts_with("tcp://") && policy.tls_cert_path.empty()) {
    throw Fatal("engine.endpoint " + quoted(policy.endpoint) +
                " has no TLS: set engine.tls_cert_path (an unauthenticated TCP engine is root "
                "for anyone who reaches it)");
  }
}

[[noreturn]] void engine_not_found(const Policy& policy, const std::string& kind) {
  std::string wanted = policy.engine == "auto" ? "docker or podman" : quoted(kind);
  throw Fatal("container engine " + wanted + " not found (searched " +
              (policy.engine_path.empty() ? policy.engine_search_path : policy.engine_path) +
              "); install it (install/deps.sh, or `apt-get install docker.io`) or set "
              "engine.path");
}

}  // namespace

Engine locate_engine(const Policy& policy) {
  require_tls_for_tcp(policy);
  fs::path self = self_executable();
  fs::path shim_dir = policy.effective_shim_dir();
  auto is_sandshim = [&](const fs::path& candidate) {
    std::error_code ec;
    return candidate.parent_path() == shim_dir || fs::canonical(candidate, ec) == self;
  };
  std::string kind = resolve_engine_kind(policy.engine, policy.engine_path,
                                         policy.engine_search_path, is_sandshim);
  std::optional<fs::path> client = policy.engine_path.empty()
                                       ? find_in_path(kind, policy.engine_search_path, is_sandshim)
                                       : usable_engine_path(policy.engine_path, is_sandshim);
  if (kind == "podman" && policy.endpoint.starts_with("tcp://")) {
    throw Fatal("engine.endpoint " + quoted(policy.endpoint) +
                ": podman's client has no TLS for tcp://, so anyone who reaches it is root there; "
                "run sandshim on that machine, or use unix:///path");
  }
  if (!client) {
    engine_not_found(policy, kind);
  }
  return Engine{kind,
                *client,
                engine_environment(policy, kind),
                policy.endpoint,
                make_dialect(kind, policy.engine_search_path),
                policy.tls_cert_path,
                policy.ssh_identity,
                policy.ssh_known_hosts};
}

}  // namespace sandshim::shim
