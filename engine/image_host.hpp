#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandshim::shim {

// `images.NAME = host`: the command runs the host's own toolchain, read-only, in an empty base.
inline constexpr std::string_view k_host_image_mode = "host";
// The empty base of host mode (install/images.sh --only host): mount points and usr-merged links.
inline constexpr std::string_view k_host_base_image = "sandshim/host:bookworm";
// The PATH a broker resolves with, and what follows an interpreter's own bin directory inside.
inline constexpr std::string_view k_system_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// What a host-mode lookup needs from the caller (or, through a broker, from the broker's rules).
struct HostLookup {
  std::string command;                       // python3, node, ...
  std::string path_variable;                 // the PATH searched
  std::filesystem::path shim_dir;            // skipped on that PATH
  std::filesystem::path cwd;                 // pyenv's .python-version is looked up from here
  std::filesystem::path home;                // never mounted, nor anything holding it
  std::optional<std::string> pyenv_version;  // PYENV_VERSION when the caller set it
  // A venv's python the command names by path (`.venv312/bin/python`, a pipx venv's): it runs as
  // named, with the venv and its base interpreter's prefix read-only; empty: looked up by name.
  // Direct mode only: through a broker the interpreter is the system's.
  std::filesystem::path venv_python;
  std::filesystem::path workspace;  // mounted already: a venv inside it is not mounted again
};

// The host toolchain one run mounts: the interpreter found, its prefix when outside /usr, the
// read-only mounts (host paths), and the PATH inside.
struct HostToolchain {
  std::filesystem::path interpreter;
  std::filesystem::path prefix;
  std::vector<std::filesystem::path> mounts;
  std::string inside_path;
};

// PATH without `dropped`'s entries (the shim directory, a pyenv shims directory).
std::string path_without(const std::string& path, const std::filesystem::path& dropped);

// The next `command` on `path_variable` that is neither in `shim_dir` nor sandshim itself (a
// shim link in another directory): what the command would run on the host.
std::optional<std::filesystem::path> next_host_command(const std::string& command,
                                                       const std::string& path_variable,
                                                       const std::filesystem::path& shim_dir);

// The venv python `program` names, absolute (relative to cwd when it is relative): DIR/bin/python*
// beside DIR/pyvenv.cfg; nullopt for anything else (a name, another program, no venv).
std::optional<std::filesystem::path> venv_python_of(const std::string& program,
                                                    const std::filesystem::path& cwd);

// A #! script of the caller's that a host-mode command runs by path from outside the workspace
// (`/usr/bin/python3 ~/.local/bin/meson setup build`, a user's `autoreconf`): that file alone is
// mounted read-only at the path named and, for a `pip install --user` tool (in the user base's
// bin/), the base's site-packages of the interpreter's version, with PYTHONUSERBASE inside.
struct HostScript {
  std::vector<std::filesystem::path> mounts;
  std::vector<std::pair<std::string, std::string>> environment;
};

// Whether host mode may mount `file` as a script: a regular file starting with `#!`, the caller's
// or root's, that neither its group nor others may write (a file someone else can change is no
// program of the caller's).
bool mountable_script(const std::filesystem::path& file);

// The script `command` runs (its second word, a path outside `workspace` that mountable_script
// accepts) and what to mount for it; nullopt for any other command. `interpreter`: the program
// that runs it (its python version picks the site-packages); `user_base`: the caller's
// PYTHONUSERBASE, else ~/.local.
std::optional<HostScript> host_script_of(const std::vector<std::string>& command,
                                         const std::filesystem::path& interpreter,
                                         const std::filesystem::path& cwd,
                                         const std::filesystem::path& workspace,
                                         const std::filesystem::path& user_base);

// True for `images.NAME = host`.
bool is_host_mode(std::string_view image);

// The lookup of one run: the caller's PATH (with pyenv's PYENV_VERSION) in direct and warm mode;
// through a broker the system PATH, since the caller's PATH, pyenv and nvm are the caller's.
HostLookup host_lookup_for(const std::string& command, const std::vector<std::string>& environment,
                           const std::filesystem::path& cwd, const std::filesystem::path& home,
                           const std::filesystem::path& shim_dir, bool broker);

// Finds the next COMMAND on PATH after the shim directory and what to mount for it, or throws
// Fatal with one line saying why host mode cannot run it (nothing then runs).
HostToolchain resolve_host_toolchain(const HostLookup& lookup);

// The curated /etc mounted in host mode (names below /etc): users, certificates, alternatives,
// the loader cache, name service switch; never shadow files, never /run or the engine socket.
const std::vector<std::string>& host_etc_entries();

}  // namespace sandshim::shim
