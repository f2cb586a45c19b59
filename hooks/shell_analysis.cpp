#include "hooks/shell_analysis.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <unordered_map>

#include "common/strings.hpp"
#include "hooks/shell_parser.hpp"

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
  bool applet = false;  // busybox APPLET: busybox's own code, never a PATH lookup
};

struct Scope {
  std::optional<size_t> enclosing_shell;
  int depth = 0;
  NameSet assigned;  // variables this script sets: their values may be anything
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
      {"busybox", "", {}, 0},
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

constexpr std::array<std::string_view, 7> k_privileged = {"sudo",    "doas", "su", "pkexec",
                                                          "runuser", "run0", "sg"};

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
      i += (arg == "--rcfile" || arg == "--init-file") ? 1 : 0;
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
  Analyser(const AnalysisOptions& options, CommandAnalysis& out) : m_options(options), m_out(out) {}

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
    Scope scope{enclosing, depth, assigned_names(parse)};
    for (const SimpleCommand& command : parse.commands) {
      analyse_simple(command, scope);
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
          {"sandshim", &Analyser::analyse_sandshim}};
      for (const WrapperSpec& spec : wrapper_specs()) {
        map.emplace(spec.name, &Analyser::peel_wrapper);
      }
      for (std::string_view name : k_privileged) {
        map.emplace(name, &Analyser::record_privileged);
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

  void analyse_simple(const SimpleCommand& command, const Scope& scope) {
    for (const Word& assignment : command.assignments) {
      check_assignment(assignment, scope);
    }
    analyse_argv(command.words, Peel{}, scope, command);
  }

  void analyse_argv(Argv argv, Peel peel, const Scope& scope, const SimpleCommand& command) {
    while (!argv.empty()) {
      const Word& head = argv.front();
      if (head.is_dynamic()) {
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
    if (lookup != Lookup::dynamic && invocation.kind == CommandClass::other) {
      invocation.launcher = launcher_of(argv, invocation.name);
      invocation.shebang = shebang_interpreter(invocation);
    }
    m_out.invocations.push_back(std::move(invocation));
    return m_out.invocations.size() - 1;
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

  // The interpreter a script's #! line starts by path, when that skips the sandbox.
  std::string shebang_interpreter(const Invocation& invocation) const {
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
    bool interpreter = classify_name(program, m_options.shimmed) == CommandClass::interpreter;
    bool in_shim_dir = lookup_of(words[0], Peel{}) == Lookup::shim;
    return interpreter && !in_shim_dir ? words[0] : "";
  }

  // `#!/usr/bin/env python3` looks the interpreter up on PATH (fine); `env -i` does not.
  static std::string env_shebang_bypass(const std::vector<std::string>& words) {
    for (size_t i = 1; i < words.size(); ++i) {
      const std::string& word = words[i];
      bool clears = word == "-i" || word == "-" || word == "--ignore-environment" ||
                    (word.size() > 1 && word[0] == '-' && word[1] != '-' &&
                     word.find('i') != std::string::npos);
      if (clears || word.starts_with("PATH=")) {
        return words[0] + " " + word;
      }
      if (!word.starts_with('-') && !assignment_name(word)) {
        return "";
      }
    }
    return "";
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
      add_finding(FindingKind::path_override, "PATH=" + excerpt(value), "", scope.enclosing_shell);
    } else if (is_protected_variable(name)) {
      add_finding(FindingKind::protected_variable, name, "", scope.enclosing_shell);
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

  std::optional<Argv> check_source(Argv argv, Peel& /*peel*/, const Scope& scope,
                                   const SimpleCommand& /*command*/) {
    if (argv.size() > 1 && argv[1].is_dynamic()) {
      add_finding(FindingKind::unanalysable, argv.front().value,
                  "it reads commands from a file computed when the command runs",
                  scope.enclosing_shell);
    }
    return std::nullopt;
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
    for (const Word& word : argv.subspan(1)) {
      if (assignment_name(word.source)) {
        check_assignment(word, scope);
      } else if (word.is_dynamic()) {
        refuse_computed(argv.front().value, scope);
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
      analyse_argv(argv.subspan(i + 1, end - i - 1), Peel{"find " + primary}, scope, command);
      i = end;
    }
    return std::nullopt;
  }

  std::optional<Argv> analyse_sandshim(Argv argv, Peel& peel, const Scope& scope,
                                       const SimpleCommand& command) {
    size_t index = record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    auto subcommand = std::find_if(argv.begin() + 1, argv.end(),
                                   [](const Word& word) { return !is_option(word); });
    m_out.invocations[index].sandshim_subcommand =
        subcommand == argv.end() ? "" : subcommand->value;
    if (m_out.invocations[index].sandshim_subcommand == "run") {
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
  // with them; only the user's config may.
  void flag_loosening_options(Argv argv) {
    static const char* const k_loosening[] = {"--network", "--workspace", "--memory",   "--cpus",
                                              "--pids",    "--timeout",   "--tmp-size", "--image"};
    for (const Word& word : argv) {
      if (word.value == "--") {
        return;
      }
      for (const char* flag : k_loosening) {
        if (word.value == flag || word.value.starts_with(std::string(flag) + "=")) {
          add_finding(FindingKind::loosening_flag, "sandshim run " + std::string(flag), "",
                      std::nullopt);
        }
      }
    }
  }

  // A shell on the host is transparent: its -c script or here-document is analysed like the
  // agent's own command line, with this shell as the enclosing one.
  std::optional<Argv> analyse_shell(Argv argv, Peel& peel, const Scope& scope,
                                    const SimpleCommand& command) {
    size_t shell = record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    ShellArguments arguments = parse_shell_arguments(argv);
    if (arguments.computed_options) {
      add_finding(FindingKind::unanalysable, argv.front().value,
                  "its options are only known when the command runs", shell);
    } else if (arguments.command_mode && arguments.operand) {
      analyse_inline_script(argv[*arguments.operand], argv.front().value + " -c", shell, scope);
    } else if (!arguments.operand) {
      analyse_standard_input_script(command, shell, scope);
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

  void analyse_standard_input_script(const SimpleCommand& command, size_t shell,
                                     const Scope& scope) {
    for (const Redirection& redirection : command.redirections) {
      if (redirection.fd > 0) {
        continue;
      }
      if (redirection.op == "<<" || redirection.op == "<<-") {
        analyse_script(redirection.heredoc_body, shell, scope.depth + 1);
      } else if (redirection.op == "<<<") {
        analyse_inline_script(redirection.target, "here-string", shell, scope);
      }
    }
  }

  const AnalysisOptions& m_options;
  CommandAnalysis& m_out;
};

}  // namespace

CommandAnalysis analyse_command(std::string_view command, const AnalysisOptions& options) {
  CommandAnalysis analysis;
  Analyser(options, analysis).analyse_script(command, std::nullopt, 0);
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
