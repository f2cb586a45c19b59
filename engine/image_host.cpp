#include "engine/image_host.hpp"

#include <algorithm>
#include <array>
#include <fstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace {

// Host directories whose contents are the host's state, not a toolchain: never a prefix.
constexpr std::array<std::string_view, 7> k_never_prefixes = {"/etc", "/run", "/var", "/proc",
                                                              "/sys", "/dev", "/boot"};
// A usr-merged system's links, which the base image carries as links into /usr.
constexpr std::array<std::string_view, 4> k_usr_links = {"bin", "lib", "lib64", "sbin"};

std::vector<std::string> split_colons(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(':', start), text.size());
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool same_directory(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// The first word of a pyenv version file, if it names one.
std::optional<std::string> version_in_file(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  if (in >> word) {
    return word;
  }
  return std::nullopt;
}

// The version pyenv picks, in its order: PYENV_VERSION, .python-version from cwd up, the
// global version file, else the system's.
std::string pyenv_version(const HostLookup& lookup, const fs::path& pyenv_root) {
  if (lookup.pyenv_version && !lookup.pyenv_version->empty()) {
    return split_colons(*lookup.pyenv_version).front();
  }
  for (fs::path dir = lookup.cwd; !dir.empty(); dir = dir.parent_path()) {
    if (auto version = version_in_file(dir / ".python-version")) {
      return *version;
    }
    if (dir == dir.root_path()) {
      break;
    }
  }
  return version_in_file(pyenv_root / "version").value_or("system");
}

// A pyenv shims directory: its parent holds `versions`.
bool is_pyenv_shims(const fs::path& dir) {
  std::error_code ec;
  return dir.filename() == "shims" && fs::is_directory(dir.parent_path() / "versions", ec);
}

// The interpreter COMMAND runs on the host: through a pyenv shim, the version it would pick.
fs::path host_interpreter(const HostLookup& lookup, std::string path_variable) {
  while (true) {
    auto found = next_host_command(lookup.command, path_variable, lookup.shim_dir);
    if (!found) {
      throw Fatal("no " + lookup.command + " on PATH after the shim directory (searched " +
                  quoted(path_variable) + ")");
    }
    fs::path dir = found->parent_path();
    if (!is_pyenv_shims(dir)) {
      return fs::canonical(*found);
    }
    std::string version = pyenv_version(lookup, dir.parent_path());
    if (version == "system") {
      path_variable = path_without(path_variable, dir);
      continue;
    }
    if (version.find('/') != std::string::npos || version == "..") {  // a workspace file says it
      throw Fatal("pyenv's version " + quoted(version) + " is not a name under versions/");
    }
    fs::path real = dir.parent_path() / "versions" / version / "bin" / lookup.command;
    std::error_code ec;
    if (!fs::exists(real, ec)) {
      throw Fatal("pyenv's version " + quoted(version) + " has no " + lookup.command + " (" +
                  quoted(real.string()) + ")");
    }
    return fs::canonical(real);
  }
}

// Whether mounting `prefix` would show `path` (the home, the workspace around the cwd).
bool holds(const fs::path& prefix, const fs::path& path) {
  std::error_code ec;
  return !path.empty() && is_within(fs::weakly_canonical(path, ec), prefix);
}

// The installation prefix of an interpreter outside /usr: the directory above its bin/.
fs::path prefix_of(const fs::path& interpreter, const HostLookup& lookup) {
  if (is_within(interpreter, "/usr")) {
    return {};
  }
  fs::path bin = interpreter.parent_path();
  fs::path prefix = bin.parent_path();
  bool deep_enough = std::distance(prefix.begin(), prefix.end()) >= 3;  // "/", "a", "b"
  bool forbidden = std::any_of(k_never_prefixes.begin(), k_never_prefixes.end(),
                               [&](std::string_view p) { return is_within(prefix, p); });
  if (bin.filename() != "bin" || !deep_enough || forbidden || holds(prefix, lookup.home) ||
      holds(prefix, lookup.cwd)) {
    throw Fatal("cannot mount the prefix of " + quoted(interpreter.string()) +
                ": host mode mounts a bin/'s parent (a Debian package, a pyenv or nvm version, a "
                "venv's base) that holds neither the home nor the working directory, outside "
                "/etc, /var, /run, /proc, /sys, /dev and /boot");
  }
  return prefix;
}

// /bin, /lib, /lib64, /sbin must be the links the base image has.
void require_usr_merged() {
  for (std::string_view name : k_usr_links) {
    fs::path link = fs::path("/") / name;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(link, ec))) {
      continue;
    }
    fs::path target = fs::read_symlink(link, ec);
    if (ec || (target != fs::path("usr") / name && target != fs::path("/usr") / name)) {
      throw Fatal("the host is not usr-merged (" + link.string() +
                  " is not a link into /usr), which host mode needs");
    }
  }
}

}  // namespace

std::string path_without(const std::string& path, const fs::path& dropped) {
  std::vector<std::string> kept;
  for (const std::string& entry : split_colons(path)) {
    if (!entry.empty() && !same_directory(entry, dropped)) {
      kept.push_back(entry);
    }
  }
  return join(kept, ":");
}

std::optional<fs::path> next_host_command(const std::string& command,
                                          const std::string& path_variable,
                                          const fs::path& shim_dir) {
  fs::path self = self_executable();
  return find_in_path(command, path_variable, [&](const fs::path& candidate) {
    std::error_code ec;
    return same_directory(candidate.parent_path(), shim_dir) ||
           fs::canonical(candidate, ec) == self;
  });
}

bool is_host_mode(std::string_view image) {
  return image == k_host_image_mode;
}

const std::vector<std::string>& host_etc_entries() {
  static const std::vector<std::string> entries = {
      "passwd",       "group",        "nsswitch.conf", "ld.so.cache",     "ld.so.conf",
      "ld.so.conf.d", "alternatives", "ssl/certs",     "ssl/openssl.cnf", "ca-certificates.conf",
      "localtime",    "protocols",    "services",      "mime.types",      "npmrc",
      "python3"};
  return entries;
}

namespace {

// The curated /etc that exists here, with Python's per-version directories (/etc/python3.11:
// Debian's sitecustomize.py is a link into it).
std::vector<fs::path> host_etc_mounts() {
  std::vector<fs::path> mounts;
  std::error_code ec;
  for (const std::string& entry : host_etc_entries()) {
    if (fs::exists(fs::path("/etc") / entry, ec)) {
      mounts.push_back(fs::path("/etc") / entry);
    }
  }
  for (const auto& entry : fs::directory_iterator("/etc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("python3.") && entry.is_directory(ec)) {
      mounts.push_back(entry.path());
    }
  }
  return mounts;
}

}  // namespace

HostLookup host_lookup_for(const std::string& command, const std::vector<std::string>& environment,
                           const fs::path& cwd, const fs::path& home, const fs::path& shim_dir,
                           bool broker) {
  HostLookup lookup{command, std::string(k_system_path), shim_dir, cwd, home, std::nullopt};
  if (broker) {
    return lookup;
  }
  for (const std::string& entry : environment) {
    if (entry.starts_with("PATH=")) {
      lookup.path_variable = entry.substr(5);
    } else if (entry.starts_with("PYENV_VERSION=")) {
      lookup.pyenv_version = entry.substr(14);
    }
  }
  return lookup;
}

HostToolchain resolve_host_toolchain(const HostLookup& lookup) {
  require_usr_merged();
  HostToolchain toolchain;
  toolchain.interpreter = host_interpreter(lookup, lookup.path_variable);
  toolchain.prefix = prefix_of(toolchain.interpreter, lookup);
  toolchain.mounts.emplace_back("/usr");
  std::error_code ec;
  if (fs::exists("/usr/sbin/ldconfig", ec)) {  // the base's /sbin is docker's; ctypes runs this
    toolchain.mounts.emplace_back("/sbin/ldconfig");
  }
  for (fs::path& mount : host_etc_mounts()) {
    toolchain.mounts.push_back(std::move(mount));
  }
  toolchain.inside_path = std::string(k_system_path);
  if (!toolchain.prefix.empty()) {
    toolchain.mounts.push_back(toolchain.prefix);
    toolchain.inside_path = (toolchain.prefix / "bin").string() + ":" + toolchain.inside_path;
  }
  return toolchain;
}

}  // namespace sandshim::shim
