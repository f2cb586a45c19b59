#include "shim/engine.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

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
  std::vector<std::string> env = {"PATH=" + policy.engine_search_path,
                                  "HOME=" + home_directory().string(), "LANG=C.UTF-8"};
  if (policy.engine == "docker") {
    env.push_back("DOCKER_CONFIG=" + engine_config_dir().string());
    if (!policy.endpoint.empty()) {
      env.push_back("DOCKER_HOST=" + policy.endpoint);
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
      if (const char* value = std::getenv(name); value != nullptr) {
        env.push_back(std::string(name) + "=" + value);
      }
    }
  }
  return env;
}

Engine locate_engine(const Policy& policy) {
  if (policy.endpoint.starts_with("tcp://") && policy.tls_cert_path.empty()) {
    throw Fatal("engine.endpoint " + quoted(policy.endpoint) +
                " has no TLS: set engine.tls_cert_path (an unauthenticated TCP engine is root "
                "for anyone who reaches it)");
  }
  fs::path self = self_executable();
  fs::path shim_dir = policy.effective_shim_dir();
  auto is_sandshim = [&](const fs::path& candidate) {
    std::error_code ec;
    return candidate.parent_path() == shim_dir || fs::canonical(candidate, ec) == self;
  };
  std::optional<fs::path> client;
  if (!policy.engine_path.empty()) {
    if (::access(policy.engine_path.c_str(), X_OK) == 0 && !is_sandshim(policy.engine_path)) {
      client = fs::path(policy.engine_path);
    }
  } else {
    client = find_in_path(policy.engine, policy.engine_search_path, is_sandshim);
  }
  if (!client) {
    throw Fatal(
        "container engine " + quoted(policy.engine) + " not found (searched " +
        (policy.engine_path.empty() ? policy.engine_search_path : policy.engine_path) +
        "); install it (install/deps.sh, or `apt-get install docker.io`) or set engine.path");
  }
  return Engine{policy.engine, *client, engine_environment(policy), policy.endpoint};
}

}  // namespace sandshim::shim
