#pragma once

// The analyser behind analyse_command (shell_analysis.hpp), shared by the files that hold its
// parts: shell_analysis.cpp (the walk over commands), shell_analysis_scope.cpp,
// shell_analysis_programs.cpp, shell_analysis_writes.cpp, shell_analysis_variables.cpp,
// shell_analysis_wrappers.cpp, shell_analysis_builtins.cpp and shell_analysis_shells.cpp.
// Internal to hooks/.

#include <algorithm>
#include <array>
#include <deque>
#include <span>
#include <unordered_map>

#include "common/strings.hpp"
#include "hooks/path_patterns.hpp"
#include "hooks/program_rules.hpp"
#include "hooks/shell_analysis.hpp"
#include "hooks/shell_parser.hpp"
#include "hooks/word_values.hpp"

namespace sandshim::hooks::analysis {

namespace fs = std::filesystem;

// `bash -c` inside `bash -c`… deeper than this is refused as unanalysable.
constexpr int k_max_script_depth = 8;

using Argv = std::span<const Word>;

// What the wrappers in front of a program did to the way it starts.
struct Peel {
  std::string wrapper;
  bool clears_environment = false;
  bool default_path = false;
  bool renames_argv0 = false;
  bool privileged = false;
  bool sandboxed = false;
  bool applet = false;             // busybox APPLET: busybox's own code, never a PATH lookup
  bool runtime_arguments = false;  // xargs: arguments (even the program) arrive on its input
  std::string replace;             // xargs -I / find -exec: this text is a run-time value
};

// `PATH="DIR:$PATH"`: DIR, and where it was put in front.
struct Prepended {
  fs::path directory;
  std::string subject;
  std::optional<size_t> enclosing_shell;
};

struct Scope {
  std::optional<size_t> enclosing_shell;
  int depth = 0;
  NameSet assigned;                      // variables this script sets: their values may be anything
  std::vector<fs::path> appended_path;   // directories this script appends to PATH
  std::vector<fs::path> cd_directories;  // literal `cd DIR` targets: relative paths may start there
  std::string cd_unknown;  // a `cd` whose directory only the running command knows: "cd \"$d\""
  bool follows_path =
      false;  // a script file run in its own process: its literal PATHs are followed
};

// Option syntax of a wrapper that runs the command after its options: table-driven so each
// wrapper is one line.
struct WrapperSpec {
  std::string_view name;
  std::string_view short_with_value;  // "-n 5" style options
  std::vector<std::string_view> long_with_value;
  size_t operands;  // positional arguments before the command (timeout's DURATION)
};

// Every wrapper the analysis peels, by name.
inline const std::vector<WrapperSpec> k_wrapper_specs = {
    {"nohup", "", {}, 0},
    {"setsid", "", {}, 0},
    {"nice", "n", {"adjustment"}, 0},
    {"ionice", "cnpPu", {"class", "classdata", "pid", "pgid", "uid"}, 0},
    {"stdbuf", "ioe", {"input", "output", "error"}, 0},
    {"timeout", "sk", {"signal", "kill-after"}, 1},
    {"time", "fo", {"format", "output"}, 0},
    {"taskset", "", {}, 1},
    {"chrt", "", {}, 1},
    {"unbuffer", "", {}, 0},
    {"catchsegv", "", {}, 0},
    {"valgrind", "", {}, 0},  // its options are all --name=value
    {"busybox", "", {}, 0},
    {"strace",
     "abeEIoOpPsSuUX",
     {"output", "trace", "signal", "user", "string-limit", "attach", "status", "expression"},
     0},
    {"ltrace", "aAeEfnoOpsSuwxX", {"output", "library", "user"}, 0},
    {"setpriv",
     "",
     {"reuid", "regid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits",
      "pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule",
      "seccomp-filter", "ptracer"},
     0},
    {"unshare",
     "SGRwt",
     {"setuid", "setgid", "root", "wd", "map-user", "map-group", "map-users", "map-groups",
      "propagation", "setgroups"},
     0},
    {"prlimit", "p", {"pid"}, 0},
    {"flock", "Ew", {"conflict-exit-code", "timeout", "wait"}, 1},
    {"watch", "ndq", {"interval", "equexit", "differences"}, 0},
    {"xargs",
     "adEILnPs",
     {"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars",
      "process-slot-var"},
     0},
};

inline const std::vector<WrapperSpec>& wrapper_specs() {
  return k_wrapper_specs;
}

// Tools that start an interpreter they locate themselves, by absolute path.
struct LauncherSpec {
  std::string_view name;
  std::string_view subcommand;  // empty: any use of the tool launches
};

constexpr std::array<LauncherSpec, 14> k_launchers = {{{"uv", "run"},
                                                       {"uvx", ""},
                                                       {"poetry", "run"},
                                                       {"pipenv", "run"},
                                                       {"pdm", "run"},
                                                       {"hatch", "run"},
                                                       {"rye", "run"},
                                                       {"pipx", "run"},
                                                       {"conda", "run"},
                                                       {"mamba", "run"},
                                                       {"micromamba", "run"},
                                                       {"pyenv", "exec"},
                                                       {"rbenv", "exec"},
                                                       {"nodenv", "exec"}}};

// Options written before a tool's verb that take the next word as their value (`uv --directory
// DIR sync`), so the verb is found; `--opt=VALUE` is one word anyway. uv's global options, poetry's
// and pip's general ones.
struct VerbOptions {
  std::string_view name;
  std::array<std::string_view, 16> with_value;
};

constexpr std::array<VerbOptions, 3> k_verb_options = {{
    {"uv",
     {"--directory", "--project", "--config-file", "--cache-dir", "--python", "-p", "--color",
      "--python-preference", "--allow-insecure-host", "--index-url", "--extra-index-url",
      "--default-index", "--index", "--find-links", "-f", "--keyring-provider"}},
    {"poetry", {"-C", "--directory", "-P", "--project"}},
    {"pip",
     {"--python", "--log", "--proxy", "--retries", "--timeout", "--exists-action", "--trusted-host",
      "--cert", "--client-cert", "--cache-dir", "--use-feature", "--use-deprecated",
      "--keyring-provider"}},
}};

// Package installers that fill a Python environment with a python they start outside the
// sandbox (pip and poetry through a #! naming a host python, uv through its own interpreter
// discovery), running the packages' build scripts there too: one rule for all of them, and
// pip's arguments that do the same job in a venv run in the sandbox.
enum class PipEquivalent {
  all_words,          // `pip install ARGS`, `uv pip install ARGS`: pip takes them as they are
  operands,           // `uv add NAME…`: the package names (options have no pip equivalent)
  requirement_files,  // `uv pip sync FILE…`: `install -r FILE…`
  fixed,              // `uv sync`: only the verb (`install -e .`)
  none,               // `uv tool install`: nothing in a venv does its job
};

struct InstallerSpec {
  std::string_view name;
  std::string_view verb;
  std::string_view subverb;  // "" when the verb alone installs
  bool needs_host_shebang;   // a script tool: only when its #! starts a python outside the sandbox
  std::string_view pip_verb;
  PipEquivalent rest;
};

constexpr std::array<InstallerSpec, 14> k_installers = {{
    {"pip", "install", "", true, "install", PipEquivalent::all_words},
    {"pip", "uninstall", "", true, "uninstall", PipEquivalent::all_words},
    {"uv", "pip", "install", false, "install", PipEquivalent::all_words},
    {"uv", "pip", "sync", false, "install", PipEquivalent::requirement_files},
    {"uv", "pip", "uninstall", false, "uninstall -y", PipEquivalent::operands},
    {"uv", "sync", "", false, "install -e .", PipEquivalent::fixed},
    {"uv", "add", "", false, "install", PipEquivalent::operands},
    {"uv", "remove", "", false, "uninstall -y", PipEquivalent::operands},
    {"uv", "tool", "install", false, "", PipEquivalent::none},
    {"poetry", "install", "", true, "install -e .", PipEquivalent::fixed},
    {"poetry", "add", "", true, "install", PipEquivalent::operands},
    {"poetry", "remove", "", true, "uninstall -y", PipEquivalent::operands},
    {"pipx", "install", "", true, "", PipEquivalent::none},
    {"pipenv", "install", "", true, "install", PipEquivalent::operands},
}};

// Programs that run their command as another user or under another root, where PATH or the
// shims are not the agent's.
constexpr std::array<std::string_view, 10> k_privileged = {
    "sudo", "doas", "su", "pkexec", "runuser", "run0", "sg", "chroot", "nsenter", "newgrp"};

// Programs that run commands sandshim does not follow (later, elsewhere, or from their own
// input): refused as unanalysable; among them the system scripts that run their arguments as a
// command (fakeroot, memusage…), which a system script's standing (not followed) would
// otherwise let through.
constexpr std::array<std::string_view, 30> k_unfollowed_runners = {
    "tmux",          "screen",       "at",        "batch",         "crontab",     "parallel",
    "sem",           "systemd-run",  "bwrap",     "firejail",      "perf",        "dtach",
    "byobu",         "zellij",       "cgexec",    "trace-cmd",     "fc",          "fakeroot",
    "fakeroot-sysv", "fakeroot-tcp", "eatmydata", "xvfb-run",      "torsocks",    "faketime",
    "memusage",      "sotruss",      "heaptrack", "pg_virtualenv", "proxychains", "proxychains4"};

// Builtins whose operands are variable names, whose subscripts bash evaluates.
constexpr std::array<std::string_view, 14> k_name_builtins = {
    "test",   "[",        "read",    "unset",     "declare", "typeset", "local",
    "export", "readonly", "mapfile", "readarray", "let",     "printf",  "getopts"};

constexpr std::array<std::string_view, 5> k_declarations = {"export", "declare", "typeset", "local",
                                                            "readonly"};

inline std::string last_component(const std::string& command) {
  size_t slash = command.find_last_of('/');
  return slash == std::string::npos ? command : command.substr(slash + 1);
}

inline bool is_option(const Word& word) {
  return !word.is_dynamic() && word.value.size() > 1 && word.value[0] == '-';
}

// How many arguments the option at argv[i] occupies.
inline size_t option_width(const std::string& option, const WrapperSpec& spec) {
  if (option.starts_with("--")) {
    size_t equals = option.find('=');
    std::string_view name = std::string_view(option).substr(
        2, equals == std::string::npos ? std::string::npos : equals - 2);
    bool takes_next = equals == std::string::npos &&
                      std::find(spec.long_with_value.begin(), spec.long_with_value.end(), name) !=
                          spec.long_with_value.end();
    return takes_next ? 2 : 1;
  }
  for (size_t j = 1; j < option.size(); ++j) {
    if (spec.short_with_value.find(option[j]) != std::string_view::npos) {
      return j + 1 == option.size() ? 2 : 1;
    }
  }
  return 1;
}

// The index of the command a wrapper runs, after its options and operands.
inline size_t command_index(Argv argv, const WrapperSpec& spec) {
  size_t i = 1;
  while (i < argv.size() && is_option(argv[i])) {
    if (argv[i].value == "--") {
      ++i;
      break;
    }
    i += option_width(argv[i].value, spec);
  }
  return std::min(i + spec.operands, argv.size());
}

inline bool appends_to_path(std::string_view value) {
  if (value.starts_with('"')) {
    value.remove_prefix(1);
  }
  for (std::string_view prefix : {std::string_view("$PATH"), std::string_view("${PATH}")}) {
    if (value.starts_with(prefix)) {
      std::string_view rest = value.substr(prefix.size());
      if (rest.starts_with('"')) {
        rest.remove_prefix(1);
      }
      return rest.empty() || rest.starts_with(':');
    }
  }
  return false;
}

inline std::string excerpt(std::string_view text) {
  return text.size() <= 60 ? std::string(text) : std::string(text.substr(0, 57)) + "...";
}

struct ShellArguments {
  bool command_mode = false;      // -c: the operand is the script itself
  std::optional<size_t> operand;  // the script (with -c) or the script file
  bool computed_options = false;  // an option word is only known at run time
  std::optional<size_t> rcfile;   // --rcfile/--init-file FILE: read as commands
};

// The option at `i`: `-c` (in a cluster too) is command mode, `-o NAME` takes the next word and
// `--rcfile FILE` names a file read as commands. Returns the index of the last word it took.
inline size_t read_shell_option(Argv argv, size_t i, ShellArguments& result) {
  const std::string& arg = argv[i].value;
  if (arg.starts_with("--")) {
    if ((arg == "--rcfile" || arg == "--init-file") && i + 1 < argv.size()) {
      result.rcfile = ++i;
    }
    return i;
  }
  result.command_mode =
      result.command_mode || (arg[0] == '-' && arg.find('c') != std::string::npos);
  return i + ((arg.back() == 'o' || arg.back() == 'O') ? 1 : 0);
}

inline ShellArguments parse_shell_arguments(Argv argv) {
  ShellArguments result;
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    const Word& word = argv[i];
    if (word.is_dynamic()) {
      result.computed_options = !result.command_mode;
      break;
    }
    const std::string& arg = word.value;
    if (arg == "--" || arg == "-") {
      ++i;
      break;
    }
    if (arg.size() < 2 || (arg[0] != '-' && arg[0] != '+')) {
      break;
    }
    i = read_shell_option(argv, i, result);
  }
  if (i < argv.size()) {
    result.operand = i;
  }
  return result;
}

class Analyser {
 public:
  Analyser(const AnalysisOptions& options, CommandAnalysis& out)
      : m_options(options),
        m_out(out),
        m_values(ValueContext{options.home, options.cwd, options.variable}) {}

  // `follows_path`: a script file run in its own process, whose literal PATHs are followed.
  void analyse_script(std::string_view script, std::optional<size_t> enclosing, int depth,
                      bool follows_path = false);

  // A directory put in front of PATH is harmless when it shadows no shimmed name, holds no
  // file this command writes, and every program the command runs by name that it holds is a
  // native program that is no interpreter, shell, engine client or loader.
  void check_prepended();

 private:
  using Handler = std::optional<Argv> (Analyser::*)(Argv, Peel&, const Scope&,
                                                    const SimpleCommand&);

  static const std::unordered_map<std::string_view, Handler>& handlers();
  // Builtins and programs with a rule of their own, by name.
  static std::unordered_map<std::string_view, Handler> named_handlers();
  // Programs that come in families: wrappers, privileged runners, declarations and shells.
  static void add_family_handlers(std::unordered_map<std::string_view, Handler>& map);

  // Names a script assigns anywhere, so that `X='…'; bash -c "… $X"` is seen as computed code.
  static NameSet assigned_names(const ShellParse& parse);

  static void add_builtin_targets(const std::vector<Word>& words, NameSet& names);

  // ---- facts about the whole script, gathered before its commands are judged -------------

  // A literal path as bash would resolve it: ~, $HOME and $PWD expanded; nullopt when another
  // expansion makes it unknowable here.
  std::optional<fs::path> literal_path(const Word& word, const fs::path& base) const;

  // An absolute path written literally, or below ~ (unquoted) or $HOME, which an agent command
  // cannot change; nullopt for anything else ($PWD moves with `cd` and may be assigned).
  std::optional<fs::path> home_or_absolute_path(const std::string& text, bool quoted) const;

  void collect_directories(const ShellParse& parse, Scope& scope) const;

  // Where a `cd` goes: a literal directory, one its variables resolve to, or unknown.
  void collect_cd(const std::vector<Word>& words, Scope& scope) const;

  // `PATH="$PATH:$PWD/bin"`: by-name programs may also be found in the appended directories.
  void collect_appended_path(const Word& word, Scope& scope) const;

  // Files this script writes (redirections, tee, cp/mv/ln/install destinations): a script
  // file among them is only known once the command runs.
  void collect_writes(const ShellParse& parse, const Scope& scope);

  // Words naming files a program writes: copy destinations (every operand, to be safe),
  // `sed -i` files, `curl -o`/`wget -O` outputs, `dd of=`.
  static std::vector<Word> written_operands(const std::vector<Word>& words);

  void remember_written(const Word& word, const Scope& scope);

  static bool writes_file(const Redirection& redirection);

  // Where a relative path may point: from the command's cwd, and from every literal `cd`.
  std::vector<fs::path> candidate_paths(const Word& word, const Scope& scope) const;

  // Strings bash evaluates again after this analysis: ${x@P}, ${!x}, and variables holding
  // `$(…)` text that reach arithmetic, [[ ]] or a builtin taking variable names.
  void check_late_evaluation(const ShellParse& parse, const Scope& scope);

  // True when the value holds `$(`, `$[` or a backquote as text: quoted or escaped in the
  // source (an ANSI-C string is judged by its decoded value). `$((…))` and `$[…]` written
  // unquoted are expansions whose result is a number, not text.
  static bool holds_code(const Word& word);

  static bool starts_code(const std::string& text, size_t i);

  static bool starts_code_at_any(const std::string& text);

  void check_subscripts(Argv words, const Scope& scope);

  template <typename F>
  static void for_each_word(const SimpleCommand& command, F&& visit) {
    for (const Word& word : command.assignments) {
      visit(word);
    }
    for (const Word& word : command.words) {
      visit(word);
    }
    for (const Redirection& redirection : command.redirections) {
      visit(redirection.target);
    }
  }

  // ---- commands ---------------------------------------------------------------------------

  void analyse_simple(const SimpleCommand& command, const Scope& scope);

  void analyse_argv(Argv argv, Peel peel, const Scope& scope, const SimpleCommand& command);

  Lookup lookup_of(const std::string& command, const Peel& peel) const;

  // The facts of a program the command starts that its words and the peeled wrappers give.
  Invocation new_invocation(Argv argv, const Peel& peel, const Scope& scope, Lookup lookup) const;
  size_t record_program(Argv argv, const Peel& peel, const Scope& scope, Lookup lookup);

  // `printf '#!…' > t && chmod +x t && ./t`: the file run is one this command writes (by path,
  // or by name from a directory the command appends to PATH).
  bool runs_written_file(const Invocation& invocation, const Scope& scope) const;

  // What the program's file is, whatever its name: a copy or link of perl is perl.
  std::optional<fs::path> identify(Invocation& invocation, const Scope& scope) const;

  // `ls` is /usr/bin/ls and a shim is sandshim: nothing to identify (which keeps a hook call
  // from comparing files for every ordinary program).
  bool is_plain_system_program(const fs::path& file, const std::string& name) const;

  std::optional<fs::path> locate_program(const std::string& command, const Scope& scope) const;

  // Arguments that reach the engine, run hidden commands, copy interpreters or write files
  // the sandbox depends on.
  void check_arguments(Argv argv, const Invocation& invocation, const Scope& scope);

  void check_copies(const std::string& name, Argv argv, const Scope& scope);

  // Programs that write, remove or move the files named by their operands.
  void check_program_writes(const std::string& name, Argv argv, const Scope& scope);

  // The words a program writes to, each with how (for messages). A copy's sources are only
  // read, but its destination directory gains each source's name (`cp .bashrc ~`).
  static std::vector<std::pair<Word, std::string>> written_targets(const std::string& name,
                                                                   Argv argv);

  static std::vector<std::pair<Word, std::string>> copy_targets(const std::string& name, Argv argv);

  // A write to one of the files the sandbox depends on, by every value its target may take;
  // for removals and moves also a directory holding one (`rm -rf ~/.config`). A target only the
  // running command knows that may be such a file fails closed.
  bool check_protected_write(const Word& target, const std::string& how, const Scope& scope);

  std::optional<std::string> protected_place_below(const fs::path& directory) const;

  static std::string launcher_of(Argv argv, const std::string& name);

  // The first `count` operands of a tool with verbs (`uv sync`, `uv pip install`), past its
  // options and the values of those that take one (k_verb_options).
  static std::vector<size_t> verb_operands(Argv argv, const std::string& name, size_t count);

  // `pip install`, `uv sync`, `poetry add`…: the installer's name and pip's equivalent
  // arguments (k_installers), once its #! is known.
  static void find_installer(Argv argv, Invocation& invocation);

  // The interpreter a script's #! line starts outside the sandbox, when it does.
  std::string shebang_interpreter(const Invocation& invocation,
                                  const std::optional<fs::path>& file) const;

  // True when `interpreter` (a #! path, absolute or relative to the script's directory… or
  // cwd, as the kernel resolves it) is a code interpreter by name or by what its file is.
  bool interpreter_file(const std::string& interpreter,
                        const std::optional<fs::path>& script) const;

  // `#!/usr/bin/env python3` looks the interpreter up on PATH (fine); `env -i`, `-u PATH`,
  // `PATH=…` and an interpreter with no shim (`python3.11`) do not reach the sandbox.
  std::string env_shebang_bypass(const std::vector<std::string>& words) const;

  // A script run as a program (`./build.sh`) whose #! names a host shell, or that has none
  // (bash then runs it itself): its text is analysed like the command line, unless it is a
  // system program (AnalysisOptions::system_program) this command does not write.
  void analyse_executed_script(const fs::path& file, size_t invocation, const Scope& scope);

  static bool is_shell_script(const std::string& text);

  // A file this command writes (a redirection, tee, cp…), as far as its target is literal.
  bool is_written(const fs::path& file) const;

  void analyse_script_text(const std::string& text, const fs::path& file,
                           std::optional<size_t> enclosing, const Scope& scope);

  // The script file a host shell or `source` reads: analysed when it can be read now.
  void analyse_script_file(const Word& operand, const std::string& subject,
                           std::optional<size_t> enclosing, const Scope& scope);

  static std::vector<std::string> split_blanks(const std::string& text);

  void add_finding(FindingKind kind, std::string subject, std::string detail,
                   std::optional<size_t> enclosing);

  void check_assignment(const Word& word, const Scope& scope);

  // `PATH="$HOME/.cargo/bin:$PATH"` (rustup's env, nvm, sdkman): directories put in front of
  // PATH, each an absolute literal, are remembered and judged once the whole command is read
  // (check_prepended). False for anything else: a replacement, a relative or computed directory.
  bool remember_prepended(const Word& word, const Scope& scope);

  // The directories of a literal PATH value: up to its `$PATH` entry, which must come, when
  // `until_path`; all of them otherwise. nullopt for an empty, relative or computed entry.
  std::optional<std::vector<fs::path>> path_directories(const Word& word, bool until_path) const;

  // `PATH='/bin:/bin'` in a script file the command runs (autoconf's configure): the literal
  // directories, which by-name lookups in that file and in what it starts then also search
  // (record_program), so each program found there is judged by its path. A sourced file's PATH
  // outlives it and is refused whole instead.
  void collect_replacement_path(const ShellParse& parse);
  std::optional<std::vector<fs::path>> replacement_directories(const Word& word) const;
  // The directory of those in which `name` is found, if any.
  std::optional<fs::path> replacement_lookup(const std::string& name) const;

  // What in `directory` would matter in front of PATH, for messages; "" when nothing.
  std::string shadowed_program(const fs::path& directory) const;

  // A binary that is no interpreter, shell, engine client or loader, whatever its name.
  bool is_native_program(const fs::path& file, const std::string& name) const;

  // The value of an assignment word whose text is fixed once quotes are removed, else "".
  static std::string literal_value(const Word& word);
  // A command-valued variable set to a literal that runs nothing (`GIT_EDITOR=true`, `PS4='+ '`).
  static bool is_inert_assignment(const std::string& name, const Word& word);

  // A variable that `read`, `for`, `printf -v`, `mapfile`… set to a value known only at run time.
  void check_runtime_assignment(const std::string& name, const std::string& how,
                                const Scope& scope);

  void check_unset(const std::string& name, const Scope& scope);

  void refuse_computed(const std::string& subject, const Scope& scope);

  // ---- wrappers: each returns the command it goes on to run -------------------------------

  std::optional<Argv> peel_wrapper(Argv argv, Peel& peel, const Scope& /*scope*/,
                                   const SimpleCommand& /*command*/);

  // `xargs -I{} {} …`: words holding the replace string are only known at run time, and a
  // wrapper left without a program runs what arrives on xargs's input.
  std::optional<Argv> peel_xargs(Argv argv, Peel& peel, const Scope& scope,
                                 const SimpleCommand& command);

  // The words holding xargs's or find's replace string, marked as the run-time text they are:
  // `xargs -I{} bash -c '{} x'` runs a script that arrives on xargs's input.
  Argv runtime_words(Argv argv, const std::string& replace);

  // `flock FILE -c COMMAND` runs COMMAND with /bin/sh; `flock FILE PROGRAM…` runs PROGRAM.
  std::optional<Argv> peel_flock(Argv argv, Peel& peel, const Scope& scope,
                                 const SimpleCommand& command);

  // `watch -x PROGRAM…` runs PROGRAM; without -x its words are one `sh -c` script.
  std::optional<Argv> peel_watch(Argv argv, Peel& peel, const Scope& scope,
                                 const SimpleCommand& command);

  // `script -c COMMAND` runs COMMAND in a shell; plain `script` starts an interactive one.
  std::optional<Argv> analyse_script_command(Argv argv, Peel& peel, const Scope& scope,
                                             const SimpleCommand& /*command*/);

  // A command string a program hands to a host shell.
  void analyse_string_command(const Word& text, const std::string& subject, const Scope& scope);

  // `gdb -batch -ex run -ex bt PROGRAM`: gdb itself is judged by its commands
  // (gdb_rules.hpp); the program it runs is a command like any other, found first in the cwd
  // as gdb finds it.
  std::optional<Argv> analyse_gdb(Argv argv, Peel& peel, const Scope& scope,
                                  const SimpleCommand& /*command*/);

  std::optional<Argv> refuse_unfollowed(Argv argv, Peel& /*peel*/, const Scope& scope,
                                        const SimpleCommand& /*command*/);

  std::optional<Argv> peel_env(Argv argv, Peel& peel, const Scope& scope,
                               const SimpleCommand& /*command*/);

  // One env option at argv[i] (advancing i past its value); false when env -S makes the rest
  // unanalysable.
  bool apply_env_option(Argv argv, size_t& i, Peel& peel, const Scope& scope);

  bool apply_env_short_options(Argv argv, size_t& i, Peel& peel, const Scope& scope);

  static std::string next_value(Argv argv, size_t& i);

  static void clear_environment(Peel& peel);

  void refuse_split_string(const Scope& scope);

  std::optional<Argv> peel_exec(Argv argv, Peel& peel, const Scope& scope,
                                const SimpleCommand& /*command*/);

  std::optional<Argv> peel_command(Argv argv, Peel& peel, const Scope& /*scope*/,
                                   const SimpleCommand& /*command*/);

  std::optional<Argv> peel_builtin(Argv argv, Peel& /*peel*/, const Scope& /*scope*/,
                                   const SimpleCommand& /*command*/);

  std::optional<Argv> record_privileged(Argv argv, Peel& peel, const Scope& scope,
                                        const SimpleCommand& /*command*/);

  // ---- builtins that change how later commands are found ---------------------------------

  std::optional<Argv> refuse_eval(Argv /*argv*/, Peel& /*peel*/, const Scope& scope,
                                  const SimpleCommand& /*command*/);

  // `source FILE`: FILE's commands run in this shell, so they are analysed here; a venv's
  // activate script puts the venv's python first on PATH.
  std::optional<Argv> check_source(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/);

  // The file `source WORD` reads: WORD itself, or its literal path once ~ or $HOME is expanded
  // (`. "$HOME/.cargo/env"`); nullopt when only the running command knows it.
  std::optional<Word> sourced_file(const Word& word) const;

  std::optional<Argv> analyse_alias(Argv argv, Peel& /*peel*/, const Scope& scope,
                                    const SimpleCommand& /*command*/);

  std::optional<Argv> check_hash(Argv argv, Peel& /*peel*/, const Scope& scope,
                                 const SimpleCommand& /*command*/);

  std::optional<Argv> check_unset_builtin(Argv argv, Peel& /*peel*/, const Scope& scope,
                                          const SimpleCommand& /*command*/);

  std::optional<Argv> check_declaration(Argv argv, Peel& /*peel*/, const Scope& scope,
                                        const SimpleCommand& /*command*/);

  // `declare -n ref=PATH`: assigning ref assigns PATH.
  void check_nameref(const Word& word, const Scope& scope);

  std::optional<Argv> check_read(Argv argv, Peel& /*peel*/, const Scope& scope,
                                 const SimpleCommand& /*command*/);

  // `mapfile [-C CALLBACK] NAME`: NAME is set from input, CALLBACK runs as code.
  std::optional<Argv> check_mapfile(Argv argv, Peel& /*peel*/, const Scope& scope,
                                    const SimpleCommand& /*command*/);

  std::optional<Argv> check_printf(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/);

  std::optional<Argv> check_getopts(Argv argv, Peel& /*peel*/, const Scope& scope,
                                    const SimpleCommand& /*command*/);

  // `compgen -C COMMAND` / `complete -C COMMAND` run COMMAND.
  std::optional<Argv> check_completion(Argv argv, Peel& /*peel*/, const Scope& scope,
                                       const SimpleCommand& /*command*/);

  std::optional<Argv> check_bind(Argv argv, Peel& /*peel*/, const Scope& scope,
                                 const SimpleCommand& /*command*/);

  // `enable -f LIBRARY NAME` loads code into the host shell.
  std::optional<Argv> check_enable(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/);

  std::optional<Argv> analyse_trap(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/);

  // ---- programs that run other programs ---------------------------------------------------

  std::optional<Argv> analyse_find(Argv argv, Peel& peel, const Scope& scope,
                                   const SimpleCommand& command);

  // The real sandshim only: a script named ./sandshim is an ordinary program.
  bool is_real_sandshim(const std::string& command) const;

  std::optional<Argv> analyse_sandshim(Argv argv, Peel& peel, const Scope& scope,
                                       const SimpleCommand& command);

  // `sandshim run` flags override every config file, so an agent could widen its own sandbox
  // with them; only the user's config may. Every option but --dry-run counts, abbreviations
  // and ones sandshim does not know included.
  void flag_loosening_options(Argv argv);

  // A shell on the host is transparent: its -c script, script file or here-document is
  // analysed like the agent's own command line, with this shell as the enclosing one. A shell
  // reading its commands from anywhere else (a pipe, a terminal) cannot be checked.
  std::optional<Argv> analyse_shell(Argv argv, Peel& peel, const Scope& scope,
                                    const SimpleCommand& command);

  // Outer expansions inside a -c script become code: a command substitution, or a variable
  // this same command sets, could be anything.
  void analyse_inline_script(const Word& script, const std::string& subject, size_t shell,
                             const Scope& scope);

  void analyse_standard_input_script(const SimpleCommand& command, const std::string& name,
                                     size_t shell, const Scope& scope);

  const AnalysisOptions& m_options;
  CommandAnalysis& m_out;
  std::vector<fs::path> m_written;     // files this command writes, as far as they are literal
  std::vector<Prepended> m_prepended;  // directories put in front of PATH
  VariableValues m_values;             // what the command's variables may hold
  int m_file_depth = 0;                // > 0 while a script file's text is analysed
  int m_sourcing = 0;                  // > 0 while a sourced file's text is analysed
  std::vector<fs::path> m_replacement_path;     // see collect_replacement_path
  std::deque<std::vector<Word>> m_owned_words;  // argv copies runtime_words marked (stable)
};

}  // namespace sandshim::hooks::analysis
