#include "install/doctor_versions.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "engine/image_host.hpp"
#include "policy/workspace.hpp"

extern char** environ;

namespace sandshim::install {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds k_probe_timeout{30};

// The caller's environment with PATH set to `path`: a version manager's shim (pyenv, nvm)
// resolves the interpreter as it would for the agent, never through sandshim's directory.
std::vector<std::string> environment_with_path(const std::string& path) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!std::string_view(*entry).starts_with("PATH=")) {
      env.emplace_back(*entry);
    }
  }
  env.push_back("PATH=" + path);
  return env;
}

std::optional<std::string> answered_version(const CapturedRun& run) {
  if (run.timed_out || run.status.code != 0) {
    return std::nullopt;
  }
  return version_in(run.out.empty() ? run.err : run.out);  // Python 2 answered on stderr
}

}  // namespace

std::optional<std::string> version_in(const std::string& answer) {
  for (size_t i = 0; i < answer.size(); ++i) {
    bool starts = std::isdigit(static_cast<unsigned char>(answer[i])) != 0 &&
                  (i == 0 || answer[i - 1] == ' ' || answer[i - 1] == 'v');
    if (!starts) {
      continue;
    }
    size_t end = i;
    while (end < answer.size() &&
           (std::isdigit(static_cast<unsigned char>(answer[end])) != 0 || answer[end] == '.')) {
      ++end;
    }
    std::string version = answer.substr(i, end - i);
    if (version.find('.') != std::string::npos) {
      return version;
    }
  }
  return std::nullopt;
}

bool same_feature_version(const std::string& a, const std::string& b) {
  auto feature = [](const std::string& version) {
    size_t first = version.find('.');
    return version.substr(0, version.find('.', first + 1));
  };
  return feature(a) == feature(b);
}

void probe_host_version(InterpreterVersions& versions, const std::string& path,
                        const fs::path& shim_dir) {
  std::string host_path = shim::path_without(path, shim_dir);
  auto found = shim::next_host_command(versions.command, host_path, shim_dir);  // never a shim
  if (!found) {
    return;
  }
  versions.host_path = *found;
  versions.host = answered_version(run_captured({found->string(), "--version"},
                                                environment_with_path(host_path), k_probe_timeout));
}

namespace {

// `command --version` in a throwaway container under the shim's hardening, `extra` flags added.
void probe_in_container(InterpreterVersions& versions, const shim::Engine& engine,
                        const std::string& image, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {engine.client.string(),
                                   "run",
                                   "--rm",
                                   "--pull=never",
                                   "--network=none",
                                   "--read-only",
                                   "--cap-drop=ALL",
                                   "--security-opt=no-new-privileges:true",
                                   "--user=65534:65534",
                                   "--log-driver=none",
                                   "--label=org.sandshim.doctor=version"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {image, versions.command, "--version"});
  versions.inside = answered_version(run_captured(argv, engine.env, k_probe_timeout));
}

}  // namespace

void probe_image_version(InterpreterVersions& versions, const shim::Engine& engine) {
  probe_in_container(versions, engine, versions.image, {});
}

void probe_host_mode_version(InterpreterVersions& versions, const shim::Engine& engine,
                             const std::string& path, const fs::path& shim_dir) {
  std::error_code ec;
  shim::HostToolchain toolchain;
  try {
    toolchain = shim::resolve_host_toolchain(
        shim::host_lookup_for(versions.command, {"PATH=" + path}, fs::current_path(ec),
                              home_directory(), shim_dir, false));
  } catch (const Fatal&) {
    return;  // no version: the mismatch line says so, and a run says why
  }
  std::vector<std::string> extra;
  for (const auto& mount : toolchain.mounts) {
    extra.push_back("--mount=" + shim::bind_mount_spec(mount, true));
  }
  extra.push_back("--env=PATH=" + toolchain.inside_path);
  probe_in_container(versions, engine, std::string(shim::k_host_base_image), extra);
}

std::string version_mismatch(const InterpreterVersions& versions) {
  if (!versions.host) {
    return "";
  }
  std::string host = "the host's " + versions.host_path.string() + " is " + *versions.host;
  if (!versions.inside) {
    return versions.command + ": " + versions.image + " gave no version; " + host;
  }
  if (same_feature_version(*versions.host, *versions.inside)) {
    return "";
  }
  return versions.command + ": " + host + ", " + versions.image + " has " + *versions.inside;
}

std::string version_fix(const InterpreterVersions& versions) {
  return "an image with " + versions.command + " " + versions.host.value_or("") +
         ", mapped with `images." + versions.command + " = IMAGE`, or `images." + versions.command +
         " = host` (the host's own)";
}

}  // namespace sandshim::install
