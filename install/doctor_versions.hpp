#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace sandshim::install {

// The interpreters whose version doctor compares between the host and their image.
inline const std::vector<std::string> k_versioned_interpreters = {"python3", "node"};

// The version in an interpreter's `--version` answer ("Python 3.11.2", "v20.1.0"): "3.11.2".
std::optional<std::string> version_in(const std::string& answer);

// Whether two versions agree on major and minor (what decides which features a suite sees).
bool same_feature_version(const std::string& a, const std::string& b);

// One interpreter, on the host (the next on PATH after the shim directory) and in its image.
struct InterpreterVersions {
  std::string command;
  std::string image;
  std::filesystem::path host_path;  // empty when none is on PATH after the shim directory
  std::optional<std::string> host;
  std::optional<std::string> inside;
};

// The host's side: `command --version` of the next `command` on `path` outside `shim_dir`.
void probe_host_version(InterpreterVersions& versions, const std::string& path,
                        const std::filesystem::path& shim_dir);

// The image's side: `command --version` in a hardened throwaway container of `image`.
void probe_image_version(InterpreterVersions& versions, const shim::Engine& engine);

// images.NAME = host's side: `command --version` in the container host mode starts (the empty
// base with the host's /usr, curated /etc and the interpreter's prefix), resolved from `path`.
void probe_host_mode_version(InterpreterVersions& versions, const shim::Engine& engine,
                             const std::string& path, const std::filesystem::path& shim_dir);

// doctor's warning for the pair: empty when they agree on major.minor (or no host interpreter is
// there to compare with), else what differs.
std::string version_mismatch(const InterpreterVersions& versions);
// The fix a mismatch names: an image with the host's version, mapped with images.COMMAND.
std::string version_fix(const InterpreterVersions& versions);

}  // namespace sandshim::install
