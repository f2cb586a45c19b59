#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hooks/interpreters.hpp"
#include "hooks/protected_paths.hpp"

namespace sandshim::hooks {

// How bash finds the program a command names.
enum class Lookup {
  by_name,  // through PATH: the shim directory, first on PATH, decides
  by_path,  // a file path: PATH, and so the shims, are skipped
  shim,     // a path into sandshim's shim directory: sandboxed
  dynamic,  // the name is only known at run time ($CMD, $(…), globs)
};

// One program the command would start (or builtin it would run), with how it gets there.
struct Invocation {
  std::string command;    // the command word after quote removal: "python3", "/usr/bin/python3"
  std::string arguments;  // the words after it, as written: "-m pytest -q" (for refusals)
  std::string name;       // its last path component
  Lookup lookup = Lookup::by_name;
  CommandClass kind = CommandClass::other;
  std::string wrapper;              // what starts it, for messages: "env -i", "xargs", "sudo"
  bool clears_environment = false;  // env -i, exec -c: PATH is gone
  bool default_path = false;        // command -p: the system's default PATH
  bool renames_argv0 = false;       // exec -a: the shim cannot tell which program it is
  bool privileged = false;          // sudo, doas…: PATH is reset to a system default
  bool sandboxed = false;           // an argument of `sandshim run`: runs in a container
  std::string launcher;             // "uv run": starts an interpreter of its own by path
  std::string script_path_dir;  // found by name in this directory of a literal PATH a script set
  std::string shebang;          // the interpreter path its #! line names, when it is one
  // "pip install", "uv sync", "poetry add": installs Python packages with a python outside the
  // sandbox (a #! naming a host python, or uv's own interpreter discovery), whose build scripts
  // run there too. `pip_arguments`: pip's arguments that do the same job in a venv, as written
  // ("install -r requirements.txt"); empty when pip has none (`uv tool install`).
  std::string installer;
  std::string pip_arguments;
  std::string sandshim_subcommand;  // for sandshim itself: "run", "install", "audit prune"…
  std::string resolved_as;  // the known program its file is, whatever its name ("perl" for a copy)
  bool engine = false;      // a container engine client, by name or by what its file is
  bool loader = false;      // ld.so and the like: runs any program, outside PATH
  std::optional<size_t> enclosing_shell;  // the shell invocation whose script holds this one
  bool in_script_file = false;            // read from a script file the command runs or sources
};

// Something in the command that changes how every later program is found, or that cannot be
// analysed at all.
enum class FindingKind {
  parse_error,         // bash syntax sandshim cannot read
  unanalysable,        // eval, env -S, a computed `bash -c` script…
  path_override,       // PATH replaced or unset (appending stays allowed)
  protected_variable,  // SANDSHIM_*, DOCKER_*, LD_PRELOAD, HOME, XDG_* set or unset
  hash_pinning,        // hash -p binds a name to a path
  loosening_flag,      // `sandshim run --network …` and other flags that widen the sandbox
  engine_access,       // a host program reaching a container engine's socket
  hidden_command,    // a program told to run a command sandshim cannot see (git -c core.fsmonitor=)
  command_variable,  // GIT_EDITOR, PAGER, PS4, BASH_ENV…: a command run or expanded later
  protected_write,   // a write to sandshim's config, state, shims, agent settings, .git/hooks
  interpreter_copy,  // an interpreter's file copied or linked under another name
  venv_activation,   // `source .venv/bin/activate`: the venv's python first on PATH
  unresolved_write,  // a write whose target only the running command knows, that may be protected
};

struct Finding {
  FindingKind kind;
  std::string subject;  // what to name in the message: "eval", "PATH=/usr/bin", "DOCKER_HOST"
  std::string detail;   // parse error text and the like
  std::optional<size_t> enclosing_shell;
  // Read from a script file the command runs or sources (`./configure`), not from the command.
  bool in_script_file = false;
  // A literal PATH that the lookups in the script file that sets it then search: its effect is
  // judged program by program instead of refused whole.
  bool followed = false;
  bool computed = false;  // a command variable set to a value only its run knows (`SHELL=$x`)
};

struct CommandAnalysis {
  std::vector<Invocation> invocations;
  std::vector<Finding> findings;
};

struct AnalysisOptions {
  NameSet shimmed;                 // command names the policy routes into the sandbox
  std::filesystem::path shim_dir;  // where the shim links live
  std::filesystem::path sandshim;  // this binary, so `/abs/sandshim run -- …` is recognised
  // The first line of the file a command word runs ("#!/usr/bin/python3"), when it is a
  // script; by-name commands are looked up on the agent's PATH. Empty: files are not read.
  std::function<std::optional<std::string>(const std::string& command)> first_line_of;
  // The file bash would run for a command word (a path from cwd, or the first match on the
  // agent's PATH), canonical. Empty: no file is looked at.
  std::function<std::optional<std::filesystem::path>(const std::string& command)> locate;
  // The known program a file is, whatever its name ("perl" for a copy of /usr/bin/perl,
  // "docker" for a link to the client), judged by the file itself.
  std::function<std::optional<std::string>(const std::filesystem::path& file)> known_program_of;
  // The text of a script a host shell would read; nullopt when it cannot be read.
  std::function<std::optional<std::string>(const std::filesystem::path& file)> read_script;
  // A script the agent cannot have written (root's, outside the workspace and HOME): run as a
  // program, like a binary in /usr/bin, and not followed into. Empty: every script is followed.
  std::function<bool(const std::filesystem::path& file)> system_program;
  std::filesystem::path cwd;   // relative paths in the command start here
  std::filesystem::path home;  // ~ and $HOME
  ProtectedPaths protected_paths;
  // The agent's environment, by name, for `$NAME` in a write target; empty: nothing is set.
  std::function<std::optional<std::string>(const std::string& name)> variable;
};

// Finds every program a shell command would start and how each is reached, looking through
// wrappers (env, exec, command, nohup, timeout, nice, xargs, find -exec, sudo…) and into the
// scripts of `bash -c`, here-documents, `$(…)`, aliases and traps.
CommandAnalysis analyse_command(std::string_view command, const AnalysisOptions& options);

// Variables an agent command may not set: they steer sandshim or its engine, or relocate the
// configuration it trusts.
bool is_protected_variable(std::string_view name);

}  // namespace sandshim::hooks
