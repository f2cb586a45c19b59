#include "engine/image_host.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <regex>

#include <sys/stat.h>
#include <unistd.h>

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

// Whether host mode may mount `prefix` (a bin/'s parent) read-only: deep enough, holding
// neither the home nor the working directory, outside the host's state directories.
bool mountable_prefix(const fs::path& prefix, const HostLookup& lookup) {
  bool deep_enough = std::distance(prefix.begin(), prefix.end()) >= 3;  // "/", "a", "b"
  bool forbidden = std::any_of(k_never_prefixes.begin(), k_never_prefixes.end(),
                               [&](std::string_view p) { return is_within(prefix, p); });
  return deep_enough && !forbidden && !holds(prefix, lookup.home) && !holds(prefix, lookup.cwd);
}

constexpr const char* k_mountable_rule =
    "host mode mounts a bin/'s parent (a Debian package, a pyenv or nvm version, a venv or its "
    "base) that holds neither the home nor the working directory, outside /etc, /var, /run, "
    "/proc, /sys, /dev and /boot";

// The installation prefix of an interpreter outside /usr: the directory above its bin/.
fs::path prefix_of(const fs::path& interpreter, const HostLookup& lookup) {
  if (is_within(interpreter, "/usr")) {
    return {};
  }
  fs::path bin = interpreter.parent_path();
  fs::path prefix = bin.parent_path();
  if (bin.filename() != "bin" || !mountable_prefix(prefix, lookup)) {
    throw Fatal("cannot mount the prefix of " + quoted(interpreter.string()) + ": " +
                k_mountable_rule);
  }
  return prefix;
}

// The venv a command names by its python: its base interpreter (where the link leads), and the
// venv itself to mount unless the workspace holds it.
fs::path venv_interpreter(const HostLookup& lookup, std::vector<fs::path>& venv_mounts) {
  std::error_code ec;
  fs::path interpreter = fs::canonical(lookup.venv_python, ec);
  if (ec) {
    throw Fatal("the venv's python " + quoted(lookup.venv_python.string()) + " leads nowhere (" +
                ec.message() + ")");
  }
  fs::path venv = lookup.venv_python.parent_path().parent_path();
  if (!lookup.workspace.empty() && is_within(fs::weakly_canonical(venv, ec), lookup.workspace)) {
    return interpreter;
  }
  if (!mountable_prefix(fs::weakly_canonical(venv, ec), lookup)) {
    throw Fatal("cannot mount the venv " + quoted(venv.string()) + ": " + k_mountable_rule);
  }
  venv_mounts.push_back(venv);
  return interpreter;
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

std::optional<fs::path> venv_python_of(const std::string& program, const fs::path& cwd) {
  std::optional<fs::path> venv = bin_parent_of(program, cwd);
  std::error_code ec;
  if (program.find('/') == std::string::npos ||
      !fs::path(program).filename().string().starts_with("python") || !venv ||
      !fs::is_regular_file(*venv / "pyvenv.cfg", ec)) {
    return std::nullopt;
  }
  return *venv / "bin" / fs::path(program).filename();
}

bool mountable_script(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != ::geteuid() && st.st_uid != 0)) {
    return false;
  }
  std::ifstream in(file, std::ios::binary);
  char magic[2] = {};
  return in.read(magic, 2) && magic[0] == '#' && magic[1] == '!';
}

namespace {

// The python version a host interpreter is ("3.11" for /usr/bin/python3 -> python3.11), or "".
std::string python_version_of(const fs::path& interpreter) {
  std::error_code ec;
  std::string name = fs::canonical(interpreter, ec).filename().string();
  static const std::regex versioned(R"(python(\d+\.\d+))");
  std::smatch match;
  return !ec && std::regex_match(name, match, versioned) ? match[1].str() : "";
}

}  // namespace

std::optional<HostScript> host_script_of(const std::vector<std::string>& command,
                                         const fs::path& interpreter, const fs::path& cwd,
                                         const fs::path& workspace, const fs::path& user_base) {
  if (command.size() < 2 || command[1].starts_with('-') ||
      command[1].find('/') == std::string::npos) {
    return std::nullopt;
  }
  fs::path script = (cwd / command[1]).lexically_normal();
  std::error_code ec;
  if (is_within(fs::weakly_canonical(script, ec), workspace) || !mountable_script(script)) {
    return std::nullopt;
  }
  HostScript mounted{{script}, {}};
  std::string version = python_version_of(interpreter);
  fs::path site = user_base / "lib" / ("python" + version) / "site-packages";
  bool user_installed =
      !user_base.empty() &&
      is_within(fs::weakly_canonical(script, ec), fs::weakly_canonical(user_base / "bin", ec));
  if (!version.empty() && user_installed && fs::is_directory(site, ec)) {
    mounted.mounts.push_back(site);
    mounted.environment.emplace_back("PYTHONUSERBASE", user_base.string());
  }
  return mounted;
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
  HostLookup lookup{command, std::string(k_system_path), shim_dir, cwd, home, std::nullopt, {}, {}};
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
  std::vector<fs::path> venv_mounts;
  toolchain.interpreter = lookup.venv_python.empty()
                              ? host_interpreter(lookup, lookup.path_variable)
                              : venv_interpreter(lookup, venv_mounts);
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
  if (!lookup.venv_python.empty()) {  // as its activation would: the venv's programs first
    toolchain.inside_path = lookup.venv_python.parent_path().string() + ":" + toolchain.inside_path;
  }
  toolchain.mounts.insert(toolchain.mounts.end(), venv_mounts.begin(), venv_mounts.end());
  return toolchain;
}

}  // namespace sandshim::shim
