#include "hooks/shell_analysis.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <span>
#include <unordered_map>

#include "common/strings.hpp"
#include "hooks/path_patterns.hpp"
#include "hooks/program_rules.hpp"
#include "hooks/shell_parser.hpp"
#include "hooks/word_values.hpp"

namespace sandshim::hooks {

namespace fs = std::filesystem;

namespace {

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
};

// Option syntax of a wrapper that runs the command after its options: table-driven so each
// wrapper is one line.
struct WrapperSpec {
  std::string_view name;
  std::string_view short_with_value;  // "-n 5" style options
  std::vector<std::string_view> long_with_value;
  size_t operands;  // positional arguments before the command (timeout's DURATION)
};

const std::vector<WrapperSpec>& wrapper_specs() {
  static const std::vector<WrapperSpec> specs = {
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
       {"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs",
        "max-chars", "process-slot-var"},
       0},
  };
  return specs;
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

// Programs that run their command as another user or under another root, where PATH or the
// shims are not the agent's.
constexpr std::array<std::string_view, 10> k_privileged = {
    "sudo", "doas", "su", "pkexec", "runuser", "run0", "sg", "chroot", "nsenter", "newgrp"};

// Programs that run commands sandshim does not follow (later, elsewhere, or from their own
// input): refused as unanalysable.
constexpr std::array<std::string_view, 17> k_unfollowed_runners = {
    "tmux",  "screen",      "at",     "batch",     "crontab", "parallel",
    "sem",   "systemd-run", "bwrap",  "firejail",  "perf",    "dtach",
    "byobu", "zellij",      "cgexec", "trace-cmd", "fc"};

// Builtins whose operands are variable names, whose subscripts bash evaluates.
constexpr std::array<std::string_view, 14> k_name_builtins = {
    "test",   "[",        "read",    "unset",     "declare", "typeset", "local",
    "export", "readonly", "mapfile", "readarray", "let",     "printf",  "getopts"};

constexpr std::array<std::string_view, 5> k_declarations = {"export", "declare", "typeset", "local",
                                                            "readonly"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& list, std::string_view text) {
  return std::find(list.begin(), list.end(), text) != list.end();
}

std::string last_component(const std::string& command) {
  size_t slash = command.find_last_of('/');
  return slash == std::string::npos ? command : command.substr(slash + 1);
}

bool is_option(const Word& word) {
  return !word.is_dynamic() && word.value.size() > 1 && word.value[0] == '-';
}

// How many arguments the option at argv[i] occupies.
size_t option_width(const std::string& option, const WrapperSpec& spec) {
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
size_t command_index(Argv argv, const WrapperSpec& spec) {
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

bool appends_to_path(std::string_view value) {
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

std::string excerpt(std::string_view text) {
  return text.size() <= 60 ? std::string(text) : std::string(text.substr(0, 57)) + "...";
}

struct ShellArguments {
  bool command_mode = false;      // -c: the operand is the script itself
  std::optional<size_t> operand;  // the script (with -c) or the script file
  bool computed_options = false;  // an option word is only known at run time
  std::optional<size_t> rcfile;   // --rcfile/--init-file FILE: read as commands
};

ShellArguments parse_shell_arguments(Argv argv) {
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
    if (arg.starts_with("--")) {
      if ((arg == "--rcfile" || arg == "--init-file") && i + 1 < argv.size()) {
        result.rcfile = ++i;
      }
      continue;
    }
    result.command_mode =
        result.command_mode || (arg[0] == '-' && arg.find('c') != std::string::npos);
    i += (arg.back() == 'o' || arg.back() == 'O') ? 1 : 0;
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

  void analyse_script(std::string_view script, std::optional<size_t> enclosing, int depth) {
    if (depth > k_max_script_depth) {
      add_finding(FindingKind::unanalysable, "shell scripts nested too deeply", "", enclosing);
      return;
    }
    ShellParse parse = parse_shell(script);
    if (parse.error) {
      add_finding(FindingKind::parse_error, "", *parse.error, enclosing);
      return;
    }
    Scope scope{enclosing, depth, assigned_names(parse), {}, {}, ""};
    m_values.learn(parse);
    collect_directories(parse, scope);
    collect_writes(parse, scope);
    check_late_evaluation(parse, scope);
    for (const std::string& name : parse.loop_variables) {
      check_runtime_assignment(name, "for " + name, scope);
    }
    for (const SimpleCommand& command : parse.commands) {
      analyse_simple(command, scope);
    }
  }

  // A directory put in front of PATH is harmless when it shadows no shimmed name, holds no
  // file this command writes, and every program the command runs by name that it holds is a
  // native program that is no interpreter, shell, engine client or loader.
  void check_prepended() {
    for (const Prepended& prepended : m_prepended) {
      std::string shadowed = shadowed_program(prepended.directory);
      if (!shadowed.empty()) {
        add_finding(FindingKind::path_override, prepended.subject,
                    "it puts " + shadowed + " in front of the shims", prepended.enclosing_shell);
      }
    }
  }

 private:
  using Handler = std::optional<Argv> (Analyser::*)(Argv, Peel&, const Scope&,
                                                    const SimpleCommand&);

  static const std::unordered_map<std::string_view, Handler>& handlers() {
    static const std::unordered_map<std::string_view, Handler> table = [] {
      std::unordered_map<std::string_view, Handler> map = {
          {"env", &Analyser::peel_env},
          {"exec", &Analyser::peel_exec},
          {"command", &Analyser::peel_command},
          {"builtin", &Analyser::peel_builtin},
          {"eval", &Analyser::refuse_eval},
          {"source", &Analyser::check_source},
          {".", &Analyser::check_source},
          {"alias", &Analyser::analyse_alias},
          {"hash", &Analyser::check_hash},
          {"unset", &Analyser::check_unset_builtin},
          {"trap", &Analyser::analyse_trap},
          {"find", &Analyser::analyse_find},
          {"sandshim", &Analyser::analyse_sandshim},
          {"read", &Analyser::check_read},
          {"mapfile", &Analyser::check_mapfile},
          {"readarray", &Analyser::check_mapfile},
          {"printf", &Analyser::check_printf},
          {"getopts", &Analyser::check_getopts},
          {"compgen", &Analyser::check_completion},
          {"complete", &Analyser::check_completion},
          {"bind", &Analyser::check_bind},
          {"enable", &Analyser::check_enable},
          {"script", &Analyser::analyse_script_command}};
      for (const WrapperSpec& spec : wrapper_specs()) {
        map.emplace(spec.name, &Analyser::peel_wrapper);
      }
      map.insert_or_assign("flock", &Analyser::peel_flock);
      map.insert_or_assign("watch", &Analyser::peel_watch);
      map.insert_or_assign("xargs", &Analyser::peel_xargs);
      for (std::string_view name : k_privileged) {
        map.emplace(name, &Analyser::record_privileged);
      }
      for (std::string_view name : k_unfollowed_runners) {
        map.emplace(name, &Analyser::refuse_unfollowed);
      }
      for (std::string_view name : k_declarations) {
        map.emplace(name, &Analyser::check_declaration);
      }
      for (std::string_view shell :
           {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "lksh"}) {
        map.emplace(shell, &Analyser::analyse_shell);
      }
      return map;
    }();
    return table;
  }

  // Names a script assigns anywhere, so that `X='…'; bash -c "… $X"` is seen as computed code.
  static NameSet assigned_names(const ShellParse& parse) {
    NameSet names(parse.loop_variables.begin(), parse.loop_variables.end());
    for (const SimpleCommand& command : parse.commands) {
      for (const Word& word : command.assignments) {
        names.insert(assignment_name(word.source).value_or(""));
      }
      add_builtin_targets(command.words, names);
    }
    return names;
  }

  static void add_builtin_targets(const std::vector<Word>& words, NameSet& names) {
    if (words.empty()) {
      return;
    }
    const std::string& builtin = words[0].value;
    bool declares = one_of(k_declarations, builtin);
    bool reads = builtin == "read" || builtin == "mapfile" || builtin == "readarray";
    for (size_t i = 1; i < words.size(); ++i) {
      if (declares) {
        names.insert(assignment_name(words[i].source).value_or(""));
      } else if (reads && !is_option(words[i])) {
        names.insert(words[i].value);
      } else if (builtin == "printf" && words[i].value == "-v" && i + 1 < words.size()) {
        names.insert(words[i + 1].value);
      }
    }
  }

  // ---- facts about the whole script, gathered before its commands are judged -------------

  // A literal path as bash would resolve it: ~, $HOME and $PWD expanded; nullopt when another
  // expansion makes it unknowable here.
  std::optional<fs::path> literal_path(const Word& word, const fs::path& base) const {
    if (word.substitutes_commands || word.arithmetic) {
      return std::nullopt;
    }
    std::string text = word.value;
    for (const auto& [variable, value] :
         {std::pair<std::string_view, fs::path>{"${HOME}", m_options.home},
          {"$HOME", m_options.home},
          {"${PWD}", m_options.cwd},
          {"$PWD", m_options.cwd}}) {
      if (text.starts_with(variable) && !value.empty()) {
        text = value.string() + text.substr(variable.size());
      }
    }
    if ((text == "~" || text.starts_with("~/")) && !m_options.home.empty() && !word.quoted) {
      text = m_options.home.string() + text.substr(1);
    }
    if (text.find('$') != std::string::npos || text.empty()) {
      return std::nullopt;
    }
    fs::path path(text);
    return (path.is_absolute() ? path : base / path).lexically_normal();
  }

  void collect_directories(const ShellParse& parse, Scope& scope) const {
    for (const SimpleCommand& command : parse.commands) {
      for (const Word& word : command.assignments) {
        collect_appended_path(word, scope);
      }
      if (!command.words.empty() &&
          (command.words[0].value == "cd" || command.words[0].value == "pushd")) {
        collect_cd(command.words, scope);
      }
      if (!command.words.empty() && one_of(k_declarations, command.words[0].value)) {
        for (const Word& word : command.words) {
          collect_appended_path(word, scope);
        }
      }
    }
  }

  // Where a `cd` goes: a literal directory, one its variables resolve to, or unknown.
  void collect_cd(const std::vector<Word>& words, Scope& scope) const {
    const Word& operand = words.back();
    if (words.size() == 1) {
      scope.cd_directories.push_back(m_options.home);
      return;
    }
    if (auto dir = literal_path(operand, m_options.cwd)) {
      scope.cd_directories.push_back(*dir);
      return;
    }
    Expansion expansion = m_values.expand(operand);
    for (const std::string& pattern : expansion.patterns) {
      std::string absolute = absolute_pattern(pattern, m_options.cwd.string());
      if (has_wildcard(absolute) || operand.value == "-") {
        scope.cd_unknown = words[0].value + " " + operand.source;
        return;
      }
      scope.cd_directories.emplace_back(absolute);
    }
  }

  // `PATH="$PATH:$PWD/bin"`: by-name programs may also be found in the appended directories.
  void collect_appended_path(const Word& word, Scope& scope) const {
    if (assignment_name(word.source) != "PATH" || m_options.cwd.empty()) {
      return;
    }
    std::string value = word.value.substr(word.value.find('=') + 1);
    size_t start = 0;
    while (start <= value.size()) {
      size_t colon = value.find(':', start);
      Word part;
      part.value = value.substr(start, colon == std::string::npos ? colon : colon - start);
      if (part.value != "$PATH" && part.value != "${PATH}") {
        if (auto dir = literal_path(part, m_options.cwd)) {
          scope.appended_path.push_back(*dir);
        }
      }
      if (colon == std::string::npos) {
        break;
      }
      start = colon + 1;
    }
  }

  // Files this script writes (redirections, tee, cp/mv/ln/install destinations): a script
  // file among them is only known once the command runs.
  void collect_writes(const ShellParse& parse, const Scope& scope) {
    for (const SimpleCommand& command : parse.commands) {
      for (const Redirection& redirection : command.redirections) {
        if (writes_file(redirection)) {
          remember_written(redirection.target, scope);
        }
      }
      if (!command.words.empty()) {
        for (const Word& word : written_operands(command.words)) {
          remember_written(word, scope);
        }
      }
    }
  }

  // Words naming files a program writes: copy destinations (every operand, to be safe),
  // `sed -i` files, `curl -o`/`wget -O` outputs, `dd of=`.
  static std::vector<Word> written_operands(const std::vector<Word>& words) {
    std::string name = last_component(words[0].value);
    bool in_place = name == "sed" && std::any_of(words.begin() + 1, words.end(), [](const Word& w) {
                      return w.value.starts_with("-i") || w.value.starts_with("--in-place");
                    });
    bool downloads = name == "curl" || name == "wget";
    std::vector<Word> written;
    for (size_t i = 1; i < words.size(); ++i) {
      const std::string& value = words[i].value;
      if (copies_files(name) || in_place) {
        written.push_back(words[i]);
      } else if (downloads &&
                 (value == "-o" || value == "-O" || value == "--output" ||
                  value == "--output-document") &&
                 i + 1 < words.size()) {
        written.push_back(words[i + 1]);
      } else if (size_t eq = value.find('=');
                 (downloads &&
                  (value.starts_with("--output=") || value.starts_with("--output-document="))) ||
                 (name == "dd" && value.starts_with("of="))) {
        Word target = words[i];
        target.value = value.substr(eq + 1);
        written.push_back(target);
      }
    }
    return written;
  }

  void remember_written(const Word& word, const Scope& scope) {
    for (const fs::path& path : candidate_paths(word, scope)) {
      m_written.push_back(path);
    }
  }

  static bool writes_file(const Redirection& redirection) {
    static constexpr std::array<std::string_view, 6> k_writing = {">",  ">>", ">|",
                                                                  "<>", "&>", "&>>"};
    if (one_of(k_writing, redirection.op)) {
      return true;
    }
    return redirection.op == ">&" && !redirection.target.value.empty() &&
           redirection.target.value != "-" &&
           std::isdigit(static_cast<unsigned char>(redirection.target.value[0])) == 0;
  }

  // Where a relative path may point: from the command's cwd, and from every literal `cd`.
  std::vector<fs::path> candidate_paths(const Word& word, const Scope& scope) const {
    std::vector<fs::path> paths;
    if (auto path = literal_path(word, m_options.cwd)) {
      paths.push_back(*path);
      if (!fs::path(word.value).is_absolute()) {
        for (const fs::path& dir : scope.cd_directories) {
          paths.push_back(*literal_path(word, dir));
        }
      }
    }
    return paths;
  }

  // Strings bash evaluates again after this analysis: ${x@P}, ${!x}, and variables holding
  // `$(…)` text that reach arithmetic, [[ ]] or a builtin taking variable names.
  void check_late_evaluation(const ShellParse& parse, const Scope& scope) {
    NameSet holding_code;
    bool evaluates = parse.arithmetic || !parse.conditional_words.empty();
    for (const SimpleCommand& command : parse.commands) {
      for_each_word(command, [&](const Word& word) {
        if (word.evaluates_later) {
          add_finding(FindingKind::unanalysable, excerpt(word.source),
                      "bash expands the value it names again, as code, when the command runs",
                      scope.enclosing_shell);
        }
      });
      for (const Word& word : command.assignments) {
        if (holds_code(word)) {
          holding_code.insert(assignment_name(word.source).value_or(""));
        }
      }
      if (!command.words.empty() && one_of(k_name_builtins, command.words[0].value)) {
        evaluates = true;
        check_subscripts(std::span(command.words).subspan(1), scope);
      }
    }
    check_subscripts(parse.conditional_words, scope);
    if (evaluates && !holding_code.empty()) {
      add_finding(FindingKind::unanalysable, "$" + *holding_code.begin(),
                  "its value holds $(…) text that arithmetic or a subscript would run",
                  scope.enclosing_shell);
    }
  }

  // True when the value holds `$(`, `$[` or a backquote as text: quoted or escaped in the
  // source (an ANSI-C string is judged by its decoded value). `$((…))` and `$[…]` written
  // unquoted are expansions whose result is a number, not text.
  static bool holds_code(const Word& word) {
    if (word.substitutes_commands) {
      return false;
    }
    if (word.source.find("$'") != std::string::npos) {
      return starts_code_at_any(word.value);
    }
    const std::string& source = word.source;
    bool single = false;
    bool double_quoted = false;
    for (size_t i = 0; i < source.size(); ++i) {
      char c = source[i];
      if (single) {
        single = c != '\'';
        if (single && starts_code(source, i)) {
          return true;
        }
      } else if (c == '\\' && i + 1 < source.size()) {
        if (starts_code(source, i + 1)) {
          return true;
        }
        ++i;
      } else if (c == '\'' && !double_quoted) {
        single = true;
      } else if (c == '"') {
        double_quoted = !double_quoted;
      }
    }
    return false;
  }

  static bool starts_code(const std::string& text, size_t i) {
    return text[i] == '`' ||
           (text[i] == '$' && i + 1 < text.size() && (text[i + 1] == '(' || text[i + 1] == '['));
  }

  static bool starts_code_at_any(const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (starts_code(text, i)) {
        return true;
      }
    }
    return false;
  }

  void check_subscripts(Argv words, const Scope& scope) {
    for (const Word& word : words) {
      bool subscript = word.value.find('[') != std::string::npos;
      if (subscript && (word.value.find("$(") != std::string::npos ||
                        word.value.find('`') != std::string::npos)) {
        add_finding(FindingKind::unanalysable, excerpt(word.value),
                    "bash evaluates the subscript, $(…) included, when the command runs",
                    scope.enclosing_shell);
      }
    }
  }

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

  void analyse_simple(const SimpleCommand& command, const Scope& scope) {
    for (const Word& assignment : command.assignments) {
      check_assignment(assignment, scope);
    }
    for (const Redirection& redirection : command.redirections) {
      if (writes_file(redirection)) {
        check_protected_write(redirection.target, redirection.op, scope);
      }
    }
    analyse_argv(command.words, Peel{}, scope, command);
  }

  void analyse_argv(Argv argv, Peel peel, const Scope& scope, const SimpleCommand& command) {
    while (!argv.empty()) {
      const Word& head = argv.front();
      if (head.is_dynamic() ||
          (!peel.replace.empty() && head.value.find(peel.replace) != std::string::npos)) {
        record_program(argv, peel, scope, Lookup::dynamic);
        return;
      }
      auto handler = handlers().find(last_component(head.value));
      if (handler == handlers().end()) {
        record_program(argv, peel, scope, lookup_of(head.value, peel));
        return;
      }
      std::optional<Argv> next = (this->*handler->second)(argv, peel, scope, command);
      if (!next) {
        return;
      }
      argv = *next;
    }
    if (peel.runtime_arguments) {
      // `… | xargs env`: the program is whatever arrives on xargs's input.
      Word input;
      input.value = "(" + peel.wrapper + " input)";
      input.parameters.push_back("xargs");
      record_program(std::span(&input, 1), peel, scope, Lookup::dynamic);
    }
  }

  Lookup lookup_of(const std::string& command, const Peel& peel) const {
    if (peel.applet) {
      return Lookup::by_path;
    }
    if (command.find('/') == std::string::npos) {
      return Lookup::by_name;
    }
    fs::path directory = fs::path(command).parent_path().lexically_normal();
    bool in_shim_dir =
        !m_options.shim_dir.empty() && directory == m_options.shim_dir.lexically_normal();
    return in_shim_dir ? Lookup::shim : Lookup::by_path;
  }

  size_t record_program(Argv argv, const Peel& peel, const Scope& scope, Lookup lookup) {
    Invocation invocation;
    invocation.command = argv.front().value;
    invocation.name = last_component(invocation.command);
    invocation.lookup = lookup;
    invocation.kind = lookup == Lookup::dynamic ? CommandClass::other
                                                : classify_name(invocation.name, m_options.shimmed);
    invocation.wrapper = peel.wrapper;
    invocation.clears_environment = peel.clears_environment;
    invocation.default_path = peel.default_path;
    invocation.renames_argv0 = peel.renames_argv0;
    invocation.privileged = peel.privileged;
    invocation.sandboxed = peel.sandboxed;
    invocation.enclosing_shell = scope.enclosing_shell;
    std::optional<fs::path> file;
    if (lookup != Lookup::dynamic && !is_shell_builtin(invocation.name)) {
      file = identify(invocation, scope);
    }
    if (lookup != Lookup::dynamic && runs_written_file(invocation, scope)) {
      add_finding(FindingKind::unanalysable, excerpt(invocation.command),
                  "this command writes that program before running it, so what it is cannot be "
                  "checked now; write it in one command and run it in the next",
                  scope.enclosing_shell);
    }
    if (lookup != Lookup::dynamic && invocation.kind == CommandClass::other) {
      invocation.launcher = launcher_of(argv, invocation.name);
      invocation.shebang = shebang_interpreter(invocation, file);
    }
    m_out.invocations.push_back(invocation);
    size_t index = m_out.invocations.size() - 1;
    // Interpreters and shells are judged by their own rules (a by-name python goes to the
    // sandbox, where an engine socket in its arguments reaches nothing).
    if (!peel.sandboxed && lookup != Lookup::dynamic && invocation.kind == CommandClass::other) {
      check_arguments(argv, invocation, scope);
      if (file && invocation.kind == CommandClass::other && invocation.shebang.empty() &&
          lookup != Lookup::shim) {
        analyse_executed_script(*file, index, scope);
      }
    }
    return index;
  }

  // `printf '#!…' > t && chmod +x t && ./t`: the file run is one this command writes (by path,
  // or by name from a directory the command appends to PATH).
  bool runs_written_file(const Invocation& invocation, const Scope& scope) const {
    if (m_written.empty() || invocation.lookup == Lookup::shim ||
        is_shell_builtin(invocation.name)) {
      return false;
    }
    std::vector<fs::path> candidates;
    if (invocation.lookup == Lookup::by_path) {
      Word word;
      word.value = invocation.command;
      candidates = candidate_paths(word, scope);
    } else {
      for (const fs::path& directory : scope.appended_path) {
        candidates.push_back((directory / invocation.name).lexically_normal());
      }
    }
    return std::any_of(candidates.begin(), candidates.end(), [&](const fs::path& path) {
      return std::find(m_written.begin(), m_written.end(), path) != m_written.end();
    });
  }

  // What the program's file is, whatever its name: a copy or link of perl is perl.
  std::optional<fs::path> identify(Invocation& invocation, const Scope& scope) const {
    invocation.engine = is_engine_client(invocation.name);
    invocation.loader = is_loader(invocation.name);
    if (invocation.lookup == Lookup::shim || !m_options.locate) {
      return std::nullopt;
    }
    std::optional<fs::path> file = locate_program(invocation.command, scope);
    if (!file || !m_options.known_program_of || invocation.kind != CommandClass::other ||
        is_plain_system_program(*file, invocation.name)) {
      return file;
    }
    std::optional<std::string> known = m_options.known_program_of(*file);
    if (known && *known != invocation.name) {
      invocation.resolved_as = *known;
      invocation.engine = invocation.engine || is_engine_client(*known);
      invocation.loader = invocation.loader || is_loader(*known);
      if (invocation.kind == CommandClass::other &&
          classify_name(*known, m_options.shimmed) == CommandClass::interpreter) {
        invocation.kind = CommandClass::interpreter;
      }
    }
    return file;
  }

  // `ls` is /usr/bin/ls and a shim is sandshim: nothing to identify (which keeps a hook call
  // from comparing files for every ordinary program).
  bool is_plain_system_program(const fs::path& file, const std::string& name) const {
    static constexpr std::array<std::string_view, 6> k_system_dirs = {
        "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin"};
    if (file == m_options.sandshim) {
      return true;
    }
    return file.filename() == name && one_of(k_system_dirs, file.parent_path().string());
  }

  std::optional<fs::path> locate_program(const std::string& command, const Scope& scope) const {
    std::optional<fs::path> file = m_options.locate(command);
    if (file || command.find('/') != std::string::npos) {
      return file;
    }
    for (const fs::path& dir : scope.appended_path) {
      if ((file = m_options.locate((dir / command).string()))) {
        return file;
      }
    }
    return std::nullopt;
  }

  // Arguments that reach the engine, run hidden commands, copy interpreters or write files
  // the sandbox depends on.
  void check_arguments(Argv argv, const Invocation& invocation, const Scope& scope) {
    std::string name = invocation.resolved_as.empty() ? invocation.name : invocation.resolved_as;
    if (auto access = engine_access_of(name, argv)) {
      add_finding(FindingKind::engine_access, *access, "", scope.enclosing_shell);
    }
    if (auto hidden = hidden_command_of(name, argv)) {
      add_finding(FindingKind::hidden_command, *hidden, "", scope.enclosing_shell);
    }
    if (copies_files(name)) {
      check_copies(name, argv, scope);
    }
    check_program_writes(name, argv, scope);
  }

  void check_copies(const std::string& name, Argv argv, const Scope& scope) {
    if (!m_options.locate || !m_options.known_program_of) {
      return;
    }
    for (const Word& word : argv.subspan(1)) {
      std::string operand = word.value.starts_with("if=") ? word.value.substr(3) : word.value;
      if (word.is_dynamic() || operand.find('/') == std::string::npos) {
        continue;
      }
      std::optional<fs::path> file = m_options.locate(operand);
      std::optional<std::string> known = file ? m_options.known_program_of(*file) : std::nullopt;
      if (known && (classify_name(*known, m_options.shimmed) != CommandClass::other ||
                    is_engine_client(*known) || is_loader(*known))) {
        add_finding(FindingKind::interpreter_copy, name + " " + operand, *known,
                    scope.enclosing_shell);
      }
    }
  }

  // Programs that write, remove or move the files named by their operands.
  void check_program_writes(const std::string& name, Argv argv, const Scope& scope) {
    for (const auto& [target, how] : written_targets(name, argv)) {
      if (check_protected_write(target, how, scope)) {
        return;  // one refusal a command is enough to fix it
      }
    }
  }

  // The words a program writes to, each with how (for messages). A copy's sources are only
  // read, but its destination directory gains each source's name (`cp .bashrc ~`).
  static std::vector<std::pair<Word, std::string>> written_targets(const std::string& name,
                                                                   Argv argv) {
    static constexpr std::array<std::string_view, 14> k_writers = {
        "tee",   "ln",    "rm",    "unlink", "rmdir", "shred",   "truncate",
        "touch", "chmod", "chown", "chgrp",  "mkdir", "sqlite3", "sponge"};
    static constexpr std::array<std::string_view, 4> k_copiers = {"cp", "mv", "install", "rsync"};
    auto has_option = [&](std::string_view prefix) {
      return std::any_of(argv.begin() + 1, argv.end(),
                         [&](const Word& w) { return w.value.starts_with(prefix); });
    };
    bool in_place =
        (name == "sed" && (has_option("-i") || has_option("--in-place"))) ||
        (name == "perl" && (has_option("-i") || has_option("-pi") || has_option("-ni")));
    std::vector<std::pair<Word, std::string>> targets;
    if (one_of(k_copiers, name) &&
        !(name == "cp" && (has_option("-l") || has_option("-s") || has_option("--link") ||
                           has_option("--symbolic-link")))) {
      return copy_targets(name, argv);
    }
    bool writer = one_of(k_writers, name) || in_place || one_of(k_copiers, name);
    for (size_t i = 1; i < argv.size(); ++i) {
      const Word& word = argv[i];
      const std::string& value = word.value;
      bool output_option = ((name == "curl" || name == "sort") && value == "-o") ||
                           (name == "wget" && value == "-O") || value == "--output" ||
                           value == "--output-document";
      size_t eq = value.find('=');
      bool output_assign =
          (name == "dd" && value.starts_with("of=")) ||
          ((name == "curl" || name == "wget" || name == "sort") &&
           (value.starts_with("--output=") || value.starts_with("--output-document=")));
      if (output_option && i + 1 < argv.size()) {
        targets.emplace_back(argv[++i], name + " " + value);
      } else if (output_assign) {
        Word target = word;
        target.value = value.substr(eq + 1);
        targets.emplace_back(target, name == "dd" ? "dd of=" : name + " " + value.substr(0, eq));
      } else if (writer && !is_option(word)) {
        targets.emplace_back(word, name);
      }
    }
    return targets;
  }

  static std::vector<std::pair<Word, std::string>> copy_targets(const std::string& name,
                                                                Argv argv) {
    std::vector<Word> operands;
    std::optional<Word> directory;
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string& value = argv[i].value;
      if ((value == "-t" || value == "--target-directory") && i + 1 < argv.size()) {
        directory = argv[++i];
      } else if (value.starts_with("--target-directory=")) {
        directory = argv[i];
        directory->value = value.substr(value.find('=') + 1);
      } else if ((value == "-S" || value == "--suffix" || value == "-m" || value == "--mode" ||
                  value == "-o" || value == "-g" || value == "--owner" || value == "--group") &&
                 i + 1 < argv.size()) {
        ++i;
      } else if (!is_option(argv[i])) {
        operands.push_back(argv[i]);
      }
    }
    if (!directory && !operands.empty()) {
      directory = operands.back();
      operands.pop_back();
    }
    std::vector<std::pair<Word, std::string>> targets;
    if (!directory) {
      return targets;
    }
    targets.emplace_back(*directory, name);
    for (const Word& source : operands) {
      if (name == "mv") {
        targets.emplace_back(source, name);  // the source goes away
      }
      Word inside = *directory;
      std::string base = last_component(source.value);
      inside.value = directory->value + "/" + (base.empty() ? source.value : base);
      inside.parameters.insert(inside.parameters.end(), source.parameters.begin(),
                               source.parameters.end());
      inside.globs = inside.globs || source.globs;
      inside.substitutes_commands = inside.substitutes_commands || source.substitutes_commands;
      inside.arithmetic = inside.arithmetic || source.arithmetic;
      targets.emplace_back(inside, name);
    }
    return targets;
  }

  // A write to one of the files the sandbox depends on, by every value its target may take;
  // for removals and moves also a directory holding one (`rm -rf ~/.config`). A target only the
  // running command knows that may be such a file fails closed.
  bool check_protected_write(const Word& target, const std::string& how, const Scope& scope) {
    bool removes = how == "rm" || how == "mv" || how == "rmdir" || how == "shred";
    Expansion expansion = m_values.expand(target);
    for (const std::string& pattern : expansion.patterns) {
      bool relative = !pattern.starts_with('/') && !pattern.starts_with(k_any_text);
      std::vector<std::string> bases = {m_options.cwd.string()};
      for (const fs::path& dir : relative ? scope.cd_directories : std::vector<fs::path>{}) {
        bases.push_back(dir.string());
      }
      if (relative && !scope.cd_unknown.empty()) {
        bases.push_back(k_unknown_pattern);
      }
      for (const std::string& base : bases) {
        std::string absolute = absolute_pattern(pattern, base);
        std::optional<std::string> what =
            protected_pattern_reason(absolute, m_options.protected_paths);
        if (!what && removes && !has_wildcard(absolute)) {
          what = protected_place_below(absolute);
        }
        if (!what) {
          continue;
        }
        std::string unknown = base == k_unknown_pattern ? scope.cd_unknown : expansion.unknown;
        if (has_wildcard(absolute) && !unknown.empty()) {
          add_finding(FindingKind::unresolved_write, how + " " + target.value, unknown,
                      scope.enclosing_shell);
        } else {
          add_finding(FindingKind::protected_write, target.value, *what, scope.enclosing_shell);
        }
        return true;
      }
    }
    return false;
  }

  std::optional<std::string> protected_place_below(const fs::path& directory) const {
    for (const ProtectedPlace& place : m_options.protected_paths.places) {
      auto mismatch =
          std::mismatch(directory.begin(), directory.end(), place.path.begin(), place.path.end());
      if (mismatch.first == directory.end() && directory != place.path) {
        return place.what + " (" + place.path.string() + ")";
      }
    }
    return std::nullopt;
  }

  static std::string launcher_of(Argv argv, const std::string& name) {
    for (const LauncherSpec& spec : k_launchers) {
      if (spec.name != name) {
        continue;
      }
      if (spec.subcommand.empty()) {
        return name;
      }
      auto operand = std::find_if(argv.begin() + 1, argv.end(),
                                  [](const Word& word) { return !is_option(word); });
      if (operand != argv.end() && operand->value == spec.subcommand) {
        return name + " " + operand->value;
      }
    }
    return "";
  }

  // The interpreter a script's #! line starts outside the sandbox, when it does.
  std::string shebang_interpreter(const Invocation& invocation,
                                  const std::optional<fs::path>& file) const {
    if (!m_options.first_line_of || invocation.lookup == Lookup::shim ||
        is_shell_builtin(invocation.name)) {
      return "";
    }
    std::optional<std::string> line = m_options.first_line_of(invocation.command);
    if (!line || !line->starts_with("#!")) {
      return "";
    }
    std::vector<std::string> words = split_blanks(line->substr(2));
    if (words.empty()) {
      return "";
    }
    std::string program = last_component(words[0]);
    if (program == "env") {
      return env_shebang_bypass(words);
    }
    if (lookup_of(words[0], Peel{}) == Lookup::shim) {
      return "";
    }
    return interpreter_file(words[0], file) ? words[0] : "";
  }

  // True when `interpreter` (a #! path, absolute or relative to the script's directory… or
  // cwd, as the kernel resolves it) is a code interpreter by name or by what its file is.
  bool interpreter_file(const std::string& interpreter,
                        const std::optional<fs::path>& script) const {
    std::string program = last_component(interpreter);
    if (classify_name(program, m_options.shimmed) == CommandClass::interpreter ||
        is_loader(program)) {
      return true;
    }
    if (!m_options.locate || !m_options.known_program_of || is_shell_name(program)) {
      return false;
    }
    std::optional<fs::path> file = m_options.locate(interpreter);
    if (!file && script && !fs::path(interpreter).is_absolute()) {
      file = m_options.locate((script->parent_path() / interpreter).string());
    }
    std::optional<std::string> known = file ? m_options.known_program_of(*file) : std::nullopt;
    return known && classify_name(*known, m_options.shimmed) == CommandClass::interpreter;
  }

  // `#!/usr/bin/env python3` looks the interpreter up on PATH (fine); `env -i`, `-u PATH`,
  // `PATH=…` and an interpreter with no shim (`python3.11`) do not reach the sandbox.
  std::string env_shebang_bypass(const std::vector<std::string>& words) const {
    for (size_t i = 1; i < words.size(); ++i) {
      const std::string& word = words[i];
      if (word == "-S" || word == "--split-string" || word == "-v" || word == "--debug") {
        continue;
      }
      bool clears =
          word == "-i" || word == "-" || word == "--ignore-environment" ||
          (word.size() > 1 && word[0] == '-' && word[1] != '-' &&
           word.find_first_of("iu") != std::string::npos && word.find('S') == std::string::npos) ||
          word == "-u" || word.starts_with("--unset");
      std::optional<std::string> assigned = assignment_name(word);
      if (clears || (assigned && (*assigned == "PATH" || is_protected_variable(*assigned)))) {
        return join(words, " ");
      }
      if (word == "-C" || word == "--chdir") {
        ++i;
        continue;
      }
      if (word.starts_with('-') || assigned) {
        continue;
      }
      bool unshimmed = classify_name(word, m_options.shimmed) == CommandClass::interpreter &&
                       !m_options.shimmed.contains(word);
      return unshimmed ? join(words, " ") : "";
    }
    return "";
  }

  // A script run as a program (`./build.sh`) whose #! names a host shell, or that has none
  // (bash then runs it itself): its text is analysed like the command line.
  void analyse_executed_script(const fs::path& file, size_t invocation, const Scope& scope) {
    if (!m_options.read_script) {
      return;
    }
    std::optional<std::string> text = m_options.read_script(file);
    if (!text || !is_shell_script(*text)) {
      return;
    }
    analyse_script_text(*text, file, invocation, scope);
  }

  static bool is_shell_script(const std::string& text) {
    if (!text.starts_with("#!")) {
      return text.find('\0') == std::string::npos;
    }
    std::vector<std::string> words = split_blanks(text.substr(2, text.find('\n') - 2));
    if (words.empty()) {
      return false;
    }
    std::string program = last_component(words[0]);
    if (program == "env") {
      auto found = std::find_if(words.begin() + 1, words.end(), [](const std::string& word) {
        return !word.starts_with('-') && !assignment_name(word);
      });
      program = found == words.end() ? "" : last_component(*found);
    }
    return is_shell_name(program);
  }

  void analyse_script_text(const std::string& text, const fs::path& file,
                           std::optional<size_t> enclosing, const Scope& scope) {
    bool written = std::any_of(m_written.begin(), m_written.end(), [&](const fs::path& path) {
      return path == file.lexically_normal();
    });
    if (written) {
      add_finding(FindingKind::unanalysable, file.filename().string(),
                  "this command writes the script before running it", enclosing);
      return;
    }
    analyse_script(text, enclosing, scope.depth + 1);
  }

  // The script file a host shell or `source` reads: analysed when it can be read now.
  void analyse_script_file(const Word& operand, const std::string& subject,
                           std::optional<size_t> enclosing, const Scope& scope) {
    std::optional<fs::path> file;
    if (!operand.is_dynamic() && m_options.locate && !operand.value.starts_with("/dev/") &&
        !operand.value.starts_with("/proc/")) {
      file = m_options.locate(operand.value.find('/') == std::string::npos ? "./" + operand.value
                                                                           : operand.value);
    }
    std::optional<std::string> text =
        file && m_options.read_script ? m_options.read_script(*file) : std::nullopt;
    if (!text) {
      if (m_options.locate) {
        add_finding(FindingKind::unanalysable, subject + " " + operand.value,
                    "it reads commands from a file that cannot be read when the command is "
                    "checked",
                    enclosing);
      }
      return;
    }
    analyse_script_text(*text, *file, enclosing, scope);
  }

  static std::vector<std::string> split_blanks(const std::string& text) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < text.size()) {
      size_t start = text.find_first_not_of(" \t\r", i);
      if (start == std::string::npos) {
        break;
      }
      size_t end = text.find_first_of(" \t\r", start);
      words.push_back(
          text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      i = end == std::string::npos ? text.size() : end;
    }
    return words;
  }

  void add_finding(FindingKind kind, std::string subject, std::string detail,
                   std::optional<size_t> enclosing) {
    m_out.findings.push_back(Finding{kind, std::move(subject), std::move(detail), enclosing});
  }

  void check_assignment(const Word& word, const Scope& scope) {
    std::string name = assignment_name(word.source).value_or("");
    size_t equals = word.source.find('=');
    std::string_view value = std::string_view(word.source).substr(equals + 1);
    bool appends = equals > 0 && word.source[equals - 1] == '+';
    if (name == "PATH" && !appends && !appends_to_path(value)) {
      if (!remember_prepended(word, scope)) {
        add_finding(FindingKind::path_override, "PATH=" + excerpt(value), "",
                    scope.enclosing_shell);
      }
    } else if (is_protected_variable(name)) {
      add_finding(FindingKind::protected_variable, name, "", scope.enclosing_shell);
    } else if (is_command_variable(name) && !runs_only_inert_program(name, literal_value(word))) {
      add_finding(FindingKind::command_variable, name, "", scope.enclosing_shell);
    }
  }

  // `PATH="$HOME/.cargo/bin:$PATH"` (rustup's env, nvm, sdkman): directories put in front of
  // PATH, each an absolute literal, are remembered and judged once the whole command is read
  // (check_prepended). False for anything else: a replacement, a relative or computed directory.
  bool remember_prepended(const Word& word, const Scope& scope) {
    if (word.substitutes_commands || word.arithmetic || word.evaluates_later || word.globs) {
      return false;
    }
    std::string value = word.value.substr(word.value.find('=') + 1);
    std::vector<fs::path> directories;
    for (size_t start = 0;;) {
      size_t colon = value.find(':', start);
      Word part;
      part.value = value.substr(start, colon == std::string::npos ? colon : colon - start);
      if (part.value == "$PATH" || part.value == "${PATH}") {
        break;
      }
      std::optional<fs::path> dir = literal_path(part, m_options.cwd);
      bool absolute = part.value.starts_with('/') || part.value.starts_with('~') ||
                      part.value.starts_with("$HOME") || part.value.starts_with("${HOME}");
      if (!dir || !absolute || colon == std::string::npos) {
        return false;
      }
      directories.push_back(*dir);
      start = colon + 1;
    }
    for (const fs::path& dir : directories) {
      m_prepended.push_back({dir, "PATH=" + excerpt(value), scope.enclosing_shell});
    }
    return true;
  }

  // What in `directory` would matter in front of PATH, for messages; "" when nothing.
  std::string shadowed_program(const fs::path& directory) const {
    bool written = std::any_of(m_written.begin(), m_written.end(), [&](const fs::path& path) {
      auto relative = path.lexically_relative(directory);
      return !relative.empty() && *relative.begin() != "..";
    });
    if (written || !m_options.locate) {
      return (directory / "…").string();
    }
    for (const std::string& name : m_options.shimmed) {
      if (m_options.locate((directory / name).string())) {
        return (directory / name).string();
      }
    }
    for (const Invocation& invocation : m_out.invocations) {
      if (invocation.lookup != Lookup::by_name || is_shell_builtin(invocation.name)) {
        continue;
      }
      std::optional<fs::path> file = m_options.locate((directory / invocation.name).string());
      if (file && !is_native_program(*file, invocation.name)) {
        return file->string();
      }
    }
    return "";
  }

  // A binary that is no interpreter, shell, engine client or loader, whatever its name.
  bool is_native_program(const fs::path& file, const std::string& name) const {
    if (classify_name(name, m_options.shimmed) != CommandClass::other || is_shell_name(name) ||
        !m_options.read_script || m_options.read_script(file)) {
      return false;  // a script: its #! or its text would have to be read in that position
    }
    std::optional<std::string> known =
        m_options.known_program_of ? m_options.known_program_of(file) : std::nullopt;
    return !known || (classify_name(*known, m_options.shimmed) == CommandClass::other &&
                      !is_shell_name(*known) && !is_engine_client(*known) && !is_loader(*known));
  }

  // The value of an assignment word whose text is fixed once quotes are removed, else "".
  static std::string literal_value(const Word& word) {
    if (word.substitutes_commands || word.arithmetic || word.evaluates_later ||
        !word.parameters.empty() || word.globs) {
      return "";
    }
    return word.value.substr(word.value.find('=') + 1);
  }

  // A variable that `read`, `for`, `printf -v`, `mapfile`… set to a value known only at run time.
  void check_runtime_assignment(const std::string& name, const std::string& how,
                                const Scope& scope) {
    std::string base = name.substr(0, name.find('['));
    if (base == "PATH") {
      add_finding(FindingKind::path_override, how, "", scope.enclosing_shell);
    } else if (is_protected_variable(base)) {
      add_finding(FindingKind::protected_variable, base, "", scope.enclosing_shell);
    } else if (is_command_variable(base)) {
      add_finding(FindingKind::command_variable, base, "", scope.enclosing_shell);
    }
  }

  void check_unset(const std::string& name, const Scope& scope) {
    if (name == "PATH") {
      add_finding(FindingKind::path_override, "unset PATH", "", scope.enclosing_shell);
    } else if (is_protected_variable(name)) {
      add_finding(FindingKind::protected_variable, name, "", scope.enclosing_shell);
    }
  }

  void refuse_computed(const std::string& subject, const Scope& scope) {
    add_finding(FindingKind::unanalysable, subject,
                "its arguments are only known when the command runs", scope.enclosing_shell);
  }

  // ---- wrappers: each returns the command it goes on to run -------------------------------

  std::optional<Argv> peel_wrapper(Argv argv, Peel& peel, const Scope& /*scope*/,
                                   const SimpleCommand& /*command*/) {
    std::string name = last_component(argv.front().value);
    const WrapperSpec& spec = *std::find_if(wrapper_specs().begin(), wrapper_specs().end(),
                                            [&](const WrapperSpec& s) { return s.name == name; });
    peel.wrapper = name;
    peel.applet = peel.applet || name == "busybox";
    return argv.subspan(command_index(argv, spec));
  }

  // `xargs -I{} {} …`: words holding the replace string are only known at run time, and a
  // wrapper left without a program runs what arrives on xargs's input.
  std::optional<Argv> peel_xargs(Argv argv, Peel& peel, const Scope& scope,
                                 const SimpleCommand& command) {
    for (size_t i = 1; i < argv.size() && is_option(argv[i]); ++i) {
      const std::string& option = argv[i].value;
      if (option == "-I" && i + 1 < argv.size()) {
        peel.replace = argv[i + 1].value;
      } else if (option.starts_with("-I") || option.starts_with("--replace=")) {
        peel.replace = option.substr(option.starts_with("-I") ? 2 : 10);
      } else if (option == "-i" || option == "--replace") {
        peel.replace = "{}";
      }
    }
    std::optional<Argv> next = peel_wrapper(argv, peel, scope, command);
    peel.runtime_arguments = true;
    return next ? std::optional<Argv>(runtime_words(*next, peel.replace)) : next;
  }

  // The words holding xargs's or find's replace string, marked as the run-time text they are:
  // `xargs -I{} bash -c '{} x'` runs a script that arrives on xargs's input.
  Argv runtime_words(Argv argv, const std::string& replace) {
    if (replace.empty()) {
      return argv;
    }
    std::vector<Word>& words = m_owned_words.emplace_back(argv.begin(), argv.end());
    for (Word& word : words) {
      word.substitutes_commands =
          word.substitutes_commands || word.value.find(replace) != std::string::npos;
    }
    return words;
  }

  // `flock FILE -c COMMAND` runs COMMAND with /bin/sh; `flock FILE PROGRAM…` runs PROGRAM.
  std::optional<Argv> peel_flock(Argv argv, Peel& peel, const Scope& scope,
                                 const SimpleCommand& command) {
    for (size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i].value == "-c" || argv[i].value == "--command") {
        analyse_string_command(argv[i + 1], "flock -c", scope);
        return std::nullopt;
      }
    }
    return peel_wrapper(argv, peel, scope, command);
  }

  // `watch -x PROGRAM…` runs PROGRAM; without -x its words are one `sh -c` script.
  std::optional<Argv> peel_watch(Argv argv, Peel& peel, const Scope& scope,
                                 const SimpleCommand& command) {
    bool exec = std::any_of(argv.begin() + 1, argv.end(), [](const Word& word) {
      return word.value == "-x" || word.value == "--exec";
    });
    std::optional<Argv> rest = peel_wrapper(argv, peel, scope, command);
    if (exec || !rest || rest->empty()) {
      return rest;
    }
    Word script;
    for (const Word& word : *rest) {
      if (word.is_dynamic()) {
        refuse_computed("watch", scope);
        return std::nullopt;
      }
      script.value += (script.value.empty() ? "" : " ") + word.value;
    }
    analyse_string_command(script, "watch", scope);
    return std::nullopt;
  }

  // `script -c COMMAND` runs COMMAND in a shell; plain `script` starts an interactive one.
  std::optional<Argv> analyse_script_command(Argv argv, Peel& peel, const Scope& scope,
                                             const SimpleCommand& /*command*/) {
    record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string& option = argv[i].value;
      if ((option == "-c" || option == "--command") && i + 1 < argv.size()) {
        analyse_string_command(argv[i + 1], "script -c", scope);
        return std::nullopt;
      }
      if (option.starts_with("--command=")) {
        Word inner = argv[i];
        inner.value = option.substr(10);
        analyse_string_command(inner, "script -c", scope);
        return std::nullopt;
      }
    }
    add_finding(FindingKind::unanalysable, "script",
                "it starts an interactive shell whose input no hook sees", scope.enclosing_shell);
    return std::nullopt;
  }

  // A command string a program hands to a host shell.
  void analyse_string_command(const Word& text, const std::string& subject, const Scope& scope) {
    if (text.is_dynamic()) {
      refuse_computed(subject, scope);
      return;
    }
    analyse_script(text.value, scope.enclosing_shell, scope.depth + 1);
  }

  std::optional<Argv> refuse_unfollowed(Argv argv, Peel& /*peel*/, const Scope& scope,
                                        const SimpleCommand& /*command*/) {
    add_finding(FindingKind::unanalysable, last_component(argv.front().value),
                "it runs commands later, elsewhere or from its own input, where sandshim cannot "
                "follow them",
                scope.enclosing_shell);
    return std::nullopt;
  }

  std::optional<Argv> peel_env(Argv argv, Peel& peel, const Scope& scope,
                               const SimpleCommand& /*command*/) {
    peel.wrapper = "env";
    size_t i = 1;
    for (; i < argv.size(); ++i) {
      const Word& word = argv[i];
      if (assignment_name(word.source)) {
        check_assignment(word, scope);
        continue;
      }
      if (word.is_dynamic()) {
        refuse_computed("env", scope);
        return std::nullopt;
      }
      if (word.value == "--") {
        ++i;
        break;
      }
      if (word.value.size() < 2 || word.value[0] != '-') {
        break;
      }
      if (!apply_env_option(argv, i, peel, scope)) {
        return std::nullopt;
      }
    }
    return argv.subspan(std::min(i, argv.size()));
  }

  // One env option at argv[i] (advancing i past its value); false when env -S makes the rest
  // unanalysable.
  bool apply_env_option(Argv argv, size_t& i, Peel& peel, const Scope& scope) {
    const std::string option = argv[i].value;
    if (option == "-" || option == "--ignore-environment") {
      clear_environment(peel);
    } else if (option.starts_with("--unset")) {
      check_unset(option.size() > 8 ? option.substr(8) : next_value(argv, i), scope);
    } else if (option.starts_with("--split-string")) {
      refuse_split_string(scope);
      return false;
    } else if (option == "--chdir") {
      ++i;
    } else if (!option.starts_with("--")) {
      return apply_env_short_options(argv, i, peel, scope);
    }
    return true;
  }

  bool apply_env_short_options(Argv argv, size_t& i, Peel& peel, const Scope& scope) {
    const std::string option = argv[i].value;
    for (size_t j = 1; j < option.size(); ++j) {
      char c = option[j];
      if (c == 'i') {
        clear_environment(peel);
      } else if (c == 'S') {
        refuse_split_string(scope);
        return false;
      } else if (c == 'u' || c == 'C') {
        std::string value = j + 1 < option.size() ? option.substr(j + 1) : next_value(argv, i);
        if (c == 'u') {
          check_unset(value, scope);
        }
        return true;
      }
    }
    return true;
  }

  static std::string next_value(Argv argv, size_t& i) {
    return ++i < argv.size() ? argv[i].value : "";
  }

  static void clear_environment(Peel& peel) {
    peel.clears_environment = true;
    peel.wrapper = "env -i";
  }

  void refuse_split_string(const Scope& scope) {
    add_finding(FindingKind::unanalysable, "env -S", "it splits a string into a command",
                scope.enclosing_shell);
  }

  std::optional<Argv> peel_exec(Argv argv, Peel& peel, const Scope& scope,
                                const SimpleCommand& /*command*/) {
    size_t i = 1;
    for (; i < argv.size() && argv[i].value != "--"; ++i) {
      if (argv[i].is_dynamic()) {
        refuse_computed("exec", scope);
        return std::nullopt;
      }
      const std::string& option = argv[i].value;
      if (option.size() < 2 || option[0] != '-') {
        break;
      }
      peel.clears_environment = peel.clears_environment || option.find('c') != std::string::npos;
      size_t a = option.find('a');
      if (a != std::string::npos) {
        peel.renames_argv0 = true;
        i += a + 1 == option.size() ? 1 : 0;  // the name follows as the next word
      }
    }
    if (i < argv.size() && argv[i].value == "--") {
      ++i;
    }
    peel.wrapper = peel.renames_argv0 ? "exec -a" : peel.clears_environment ? "exec -c" : "exec";
    return argv.subspan(std::min(i, argv.size()));
  }

  std::optional<Argv> peel_command(Argv argv, Peel& peel, const Scope& /*scope*/,
                                   const SimpleCommand& /*command*/) {
    size_t i = 1;
    for (; i < argv.size() && is_option(argv[i]); ++i) {
      const std::string& option = argv[i].value;
      if (option == "--") {
        ++i;
        break;
      }
      if (option.find_first_of("vV") != std::string::npos) {
        return std::nullopt;  // command -v: a query, nothing runs
      }
      if (option.find('p') != std::string::npos) {
        peel.default_path = true;
        peel.wrapper = "command -p";
      }
    }
    return argv.subspan(i);
  }

  std::optional<Argv> peel_builtin(Argv argv, Peel& /*peel*/, const Scope& /*scope*/,
                                   const SimpleCommand& /*command*/) {
    return argv.subspan(1);
  }

  std::optional<Argv> record_privileged(Argv argv, Peel& peel, const Scope& scope,
                                        const SimpleCommand& /*command*/) {
    peel.privileged = true;
    record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    return std::nullopt;
  }

  // ---- builtins that change how later commands are found ---------------------------------

  std::optional<Argv> refuse_eval(Argv /*argv*/, Peel& /*peel*/, const Scope& scope,
                                  const SimpleCommand& /*command*/) {
    add_finding(FindingKind::unanalysable, "eval",
                "it runs text that only exists when the command runs", scope.enclosing_shell);
    return std::nullopt;
  }

  // `source FILE`: FILE's commands run in this shell, so they are analysed here; a venv's
  // activate script puts the venv's python first on PATH.
  std::optional<Argv> check_source(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/) {
    if (argv.size() < 2) {
      return std::nullopt;
    }
    std::optional<Word> file = sourced_file(argv[1]);
    if (!file) {
      add_finding(FindingKind::unanalysable, argv.front().value,
                  "it reads commands from a file computed when the command runs",
                  scope.enclosing_shell);
    } else if (last_component(file->value).starts_with("activate")) {
      add_finding(FindingKind::venv_activation, argv.front().value + " " + file->value, file->value,
                  scope.enclosing_shell);
    } else {
      analyse_script_file(*file, argv.front().value, scope.enclosing_shell, scope);
    }
    return std::nullopt;
  }

  // The file `source WORD` reads: WORD itself, or its literal path once ~, $HOME and $PWD are
  // expanded (`. "$HOME/.cargo/env"`); nullopt when only the running command knows it.
  std::optional<Word> sourced_file(const Word& word) const {
    bool expands = word.is_dynamic() || word.value.starts_with('~');
    if (expands && !word.globs) {
      if (std::optional<fs::path> path = literal_path(word, m_options.cwd)) {
        Word resolved;
        resolved.value = path->string();
        return resolved;
      }
    }
    return word.is_dynamic() ? std::nullopt : std::optional<Word>(word);
  }

  std::optional<Argv> analyse_alias(Argv argv, Peel& /*peel*/, const Scope& scope,
                                    const SimpleCommand& /*command*/) {
    for (const Word& word : argv.subspan(1)) {
      size_t equals = word.value.find('=');
      if (equals == std::string::npos) {
        continue;
      }
      if (word.is_dynamic()) {
        refuse_computed("alias", scope);
      } else {
        analyse_script(std::string_view(word.value).substr(equals + 1), scope.enclosing_shell,
                       scope.depth + 1);
      }
    }
    return std::nullopt;
  }

  std::optional<Argv> check_hash(Argv argv, Peel& /*peel*/, const Scope& scope,
                                 const SimpleCommand& /*command*/) {
    bool pins = std::any_of(argv.begin() + 1, argv.end(), [](const Word& word) {
      return is_option(word) && word.value[1] != '-' && word.value.find('p') != std::string::npos;
    });
    if (pins) {
      add_finding(FindingKind::hash_pinning, "hash -p", "", scope.enclosing_shell);
    }
    return std::nullopt;
  }

  std::optional<Argv> check_unset_builtin(Argv argv, Peel& /*peel*/, const Scope& scope,
                                          const SimpleCommand& /*command*/) {
    for (const Word& word : argv.subspan(1)) {
      if (word.value == "-f") {
        return std::nullopt;  // functions, not variables
      }
      if (word.is_dynamic()) {
        refuse_computed("unset", scope);
      } else if (!is_option(word)) {
        check_unset(word.value, scope);
      }
    }
    return std::nullopt;
  }

  std::optional<Argv> check_declaration(Argv argv, Peel& /*peel*/, const Scope& scope,
                                        const SimpleCommand& /*command*/) {
    bool nameref = std::any_of(argv.begin() + 1, argv.end(), [](const Word& word) {
      return is_option(word) && word.value[0] == '-' && word.value.find('n') != std::string::npos;
    });
    for (const Word& word : argv.subspan(1)) {
      if (assignment_name(word.source)) {
        check_assignment(word, scope);
        if (nameref) {
          check_nameref(word, scope);
        }
      } else if (word.is_dynamic()) {
        refuse_computed(argv.front().value, scope);
      } else if (nameref && !is_option(word)) {
        add_finding(FindingKind::unanalysable, argv.front().value + " -n " + word.value,
                    "a reference with no target is bound by its first assignment",
                    scope.enclosing_shell);
      }
    }
    return std::nullopt;
  }

  // `declare -n ref=PATH`: assigning ref assigns PATH.
  void check_nameref(const Word& word, const Scope& scope) {
    std::string target = word.value.substr(word.value.find('=') + 1);
    if (word.is_dynamic()) {
      refuse_computed("declare -n", scope);
    } else {
      check_runtime_assignment(target, "declare -n " + excerpt(word.value), scope);
    }
  }

  std::optional<Argv> check_read(Argv argv, Peel& /*peel*/, const Scope& scope,
                                 const SimpleCommand& /*command*/) {
    static constexpr std::string_view k_with_value = "dinNptu";
    for (size_t i = 1; i < argv.size(); ++i) {
      const Word& word = argv[i];
      if (word.is_dynamic()) {
        refuse_computed("read", scope);
      } else if (is_option(word)) {
        char last = word.value.back();
        if (last == 'a' && i + 1 < argv.size()) {
          check_runtime_assignment(argv[++i].value, "read -a", scope);
        } else if (k_with_value.find(last) != std::string_view::npos) {
          ++i;
        }
      } else {
        check_runtime_assignment(word.value, "read " + word.value, scope);
      }
    }
    return std::nullopt;
  }

  // `mapfile [-C CALLBACK] NAME`: NAME is set from input, CALLBACK runs as code.
  std::optional<Argv> check_mapfile(Argv argv, Peel& /*peel*/, const Scope& scope,
                                    const SimpleCommand& /*command*/) {
    static constexpr std::string_view k_with_value = "dnOsuc";
    std::string target = "MAPFILE";
    for (size_t i = 1; i < argv.size(); ++i) {
      const Word& word = argv[i];
      if (word.is_dynamic()) {
        refuse_computed(argv.front().value, scope);
      } else if (word.value == "-C" && i + 1 < argv.size()) {
        analyse_string_command(argv[++i], "mapfile -C", scope);
      } else if (is_option(word)) {
        i += k_with_value.find(word.value.back()) != std::string_view::npos ? 1 : 0;
      } else {
        target = word.value;
      }
    }
    check_runtime_assignment(target, argv.front().value + " " + target, scope);
    return std::nullopt;
  }

  std::optional<Argv> check_printf(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/) {
    if (argv.size() > 2 && argv[1].value == "-v") {
      if (argv[2].is_dynamic()) {
        refuse_computed("printf -v", scope);
      } else {
        check_runtime_assignment(argv[2].value, "printf -v " + argv[2].value, scope);
      }
    }
    return std::nullopt;
  }

  std::optional<Argv> check_getopts(Argv argv, Peel& /*peel*/, const Scope& scope,
                                    const SimpleCommand& /*command*/) {
    if (argv.size() > 2) {
      if (argv[2].is_dynamic()) {
        refuse_computed("getopts", scope);
      } else {
        check_runtime_assignment(argv[2].value, "getopts " + argv[2].value, scope);
      }
    }
    return std::nullopt;
  }

  // `compgen -C COMMAND` / `complete -C COMMAND` run COMMAND.
  std::optional<Argv> check_completion(Argv argv, Peel& /*peel*/, const Scope& scope,
                                       const SimpleCommand& /*command*/) {
    for (size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i].value == "-C") {
        analyse_string_command(argv[i + 1], argv.front().value + " -C", scope);
      }
    }
    return std::nullopt;
  }

  std::optional<Argv> check_bind(Argv argv, Peel& /*peel*/, const Scope& scope,
                                 const SimpleCommand& /*command*/) {
    for (const Word& word : argv.subspan(1)) {
      if (word.value.starts_with("-x") || word.is_dynamic()) {
        add_finding(FindingKind::unanalysable, "bind -x", "it binds a command run later",
                    scope.enclosing_shell);
        break;
      }
    }
    return std::nullopt;
  }

  // `enable -f LIBRARY NAME` loads code into the host shell.
  std::optional<Argv> check_enable(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/) {
    for (const Word& word : argv.subspan(1)) {
      if ((is_option(word) && word.value.find('f') != std::string::npos) || word.is_dynamic()) {
        add_finding(FindingKind::unanalysable, "enable -f",
                    "it loads a shared library into the host shell", scope.enclosing_shell);
        break;
      }
    }
    return std::nullopt;
  }

  std::optional<Argv> analyse_trap(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/) {
    auto action = std::find_if(argv.begin() + 1, argv.end(),
                               [](const Word& word) { return !is_option(word); });
    if (action == argv.end() || action->value.empty() || action->value == "-") {
      return std::nullopt;
    }
    if (action->is_dynamic()) {
      refuse_computed("trap", scope);
    } else {
      analyse_script(action->value, scope.enclosing_shell, scope.depth + 1);
    }
    return std::nullopt;
  }

  // ---- programs that run other programs ---------------------------------------------------

  std::optional<Argv> analyse_find(Argv argv, Peel& peel, const Scope& scope,
                                   const SimpleCommand& command) {
    record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string& primary = argv[i].value;
      if (primary != "-exec" && primary != "-execdir" && primary != "-ok" && primary != "-okdir") {
        continue;
      }
      size_t end = i + 1;
      while (end < argv.size() && argv[end].value != ";" && argv[end].value != "+") {
        ++end;
      }
      Peel found;
      found.wrapper = "find " + primary;
      found.replace = "{}";
      analyse_argv(runtime_words(argv.subspan(i + 1, end - i - 1), found.replace), found, scope,
                   command);
      i = end;
    }
    return std::nullopt;
  }

  // The real sandshim only: a script named ./sandshim is an ordinary program.
  bool is_real_sandshim(const std::string& command) const {
    if (!m_options.locate || m_options.sandshim.empty()) {
      return command.find('/') == std::string::npos || fs::path(command) == m_options.sandshim;
    }
    std::optional<fs::path> file = m_options.locate(command);
    std::error_code ec;
    return file && fs::equivalent(*file, m_options.sandshim, ec);
  }

  std::optional<Argv> analyse_sandshim(Argv argv, Peel& peel, const Scope& scope,
                                       const SimpleCommand& command) {
    if (!is_real_sandshim(argv.front().value)) {
      record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
      return std::nullopt;
    }
    size_t index = record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    auto subcommand = std::find_if(argv.begin() + 1, argv.end(),
                                   [](const Word& word) { return !is_option(word); });
    std::string name = subcommand == argv.end() ? "" : subcommand->value;
    if (name == "audit" && subcommand + 1 != argv.end()) {
      name += " " + (subcommand + 1)->value;
    }
    m_out.invocations[index].sandshim_subcommand = name;
    if (name == "run") {
      flag_loosening_options(argv);
      auto separator = std::find_if(argv.begin(), argv.end(),
                                    [](const Word& word) { return word.value == "--"; });
      if (separator != argv.end()) {
        Argv inner = argv.subspan(static_cast<size_t>(separator - argv.begin()) + 1);
        Peel sandboxed;
        sandboxed.wrapper = "sandshim run";
        sandboxed.sandboxed = true;
        analyse_argv(inner, sandboxed, scope, command);
      }
    }
    return std::nullopt;
  }

  // `sandshim run` flags override every config file, so an agent could widen its own sandbox
  // with them; only the user's config may. Every option but --dry-run counts, abbreviations
  // and ones sandshim does not know included.
  void flag_loosening_options(Argv argv) {
    for (const Word& word : argv.subspan(1)) {
      if (word.value == "--") {
        return;
      }
      if (word.is_dynamic() || (is_option(word) && word.value != "--dry-run")) {
        add_finding(FindingKind::loosening_flag, "sandshim run " + excerpt(word.value), "",
                    std::nullopt);
      }
    }
  }

  // A shell on the host is transparent: its -c script, script file or here-document is
  // analysed like the agent's own command line, with this shell as the enclosing one. A shell
  // reading its commands from anywhere else (a pipe, a terminal) cannot be checked.
  std::optional<Argv> analyse_shell(Argv argv, Peel& peel, const Scope& scope,
                                    const SimpleCommand& command) {
    size_t shell = record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    ShellArguments arguments = parse_shell_arguments(argv);
    std::string name = argv.front().value;
    if (arguments.rcfile) {
      analyse_script_file(argv[*arguments.rcfile], name + " --rcfile", shell, scope);
    }
    if (arguments.computed_options) {
      add_finding(FindingKind::unanalysable, name,
                  "its options are only known when the command runs", shell);
    } else if (arguments.command_mode && arguments.operand) {
      analyse_inline_script(argv[*arguments.operand], name + " -c", shell, scope);
    } else if (arguments.operand) {
      analyse_script_file(argv[*arguments.operand], name, shell, scope);
    } else if (peel.runtime_arguments) {
      add_finding(FindingKind::unanalysable, name + " (xargs)",
                  arguments.command_mode ? "its script arrives on xargs's input"
                                         : "its script file arrives on xargs's input",
                  shell);
    } else if (!arguments.command_mode) {
      analyse_standard_input_script(command, name, shell, scope);
    }
    return std::nullopt;
  }

  // Outer expansions inside a -c script become code: a command substitution, or a variable
  // this same command sets, could be anything.
  void analyse_inline_script(const Word& script, const std::string& subject, size_t shell,
                             const Scope& scope) {
    bool computed =
        script.substitutes_commands ||
        std::any_of(script.parameters.begin(), script.parameters.end(),
                    [&](const std::string& name) { return scope.assigned.contains(name); });
    if (computed) {
      add_finding(FindingKind::unanalysable, subject,
                  "its script is computed when the command runs", shell);
      return;
    }
    analyse_script(script.value, shell, scope.depth + 1);
  }

  void analyse_standard_input_script(const SimpleCommand& command, const std::string& name,
                                     size_t shell, const Scope& scope) {
    for (const Redirection& redirection : command.redirections) {
      if (redirection.fd > 0) {
        continue;
      }
      if (redirection.op == "<<" || redirection.op == "<<-") {
        analyse_script(redirection.heredoc_body, shell, scope.depth + 1);
        return;
      }
      if (redirection.op == "<<<") {
        analyse_inline_script(redirection.target, "here-string", shell, scope);
        return;
      }
      if (redirection.op == "<") {
        analyse_script_file(redirection.target, name + " <", shell, scope);
        return;
      }
    }
    add_finding(FindingKind::unanalysable, name,
                "it reads its commands from standard input (a pipe or a terminal) when it runs",
                shell);
  }

  const AnalysisOptions& m_options;
  CommandAnalysis& m_out;
  std::vector<fs::path> m_written;     // files this command writes, as far as they are literal
  std::vector<Prepended> m_prepended;  // directories put in front of PATH
  VariableValues m_values;             // what the command's variables may hold
  std::deque<std::vector<Word>> m_owned_words;  // argv copies runtime_words marked (stable)
};

}  // namespace

CommandAnalysis analyse_command(std::string_view command, const AnalysisOptions& options) {
  CommandAnalysis analysis;
  Analyser analyser(options, analysis);
  analyser.analyse_script(command, std::nullopt, 0);
  analyser.check_prepended();
  return analysis;
}

bool is_protected_variable(std::string_view name) {
  static constexpr std::array<std::string_view, 4> k_prefixes = {"SANDSHIM_", "DOCKER_",
                                                                 "CONTAINERS_", "BUILDKIT_"};
  static constexpr std::array<std::string_view, 8> k_names = {
      "LD_PRELOAD", "LD_AUDIT",        "CONTAINER_HOST", "CONTAINER_CONNECTION",
      "HOME",       "XDG_CONFIG_HOME", "XDG_DATA_HOME",  "XDG_STATE_HOME"};
  return one_of(k_names, name) ||
         std::any_of(k_prefixes.begin(), k_prefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

}  // namespace sandshim::hooks
