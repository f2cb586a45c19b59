// One program the command starts: how bash finds it, what its file is, its #! line, and
// the script text a host shell reads from it.

#include "engine/image_host.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

Lookup Analyser::lookup_of(const std::string& command, const Peel& peel) const {
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

Invocation Analyser::new_invocation(Argv argv, const Peel& peel, const Scope& scope,
                                    Lookup lookup) const {
  Invocation invocation;
  invocation.command = argv.front().value;
  invocation.name = last_component(invocation.command);
  for (const Word& word : argv.subspan(1)) {
    invocation.arguments += (invocation.arguments.empty() ? "" : " ") + word.source;
  }
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
  invocation.in_script_file = m_file_depth > 0;
  return invocation;
}

size_t Analyser::record_program(Argv argv, const Peel& peel, const Scope& scope, Lookup lookup) {
  Invocation invocation = new_invocation(argv, peel, scope, lookup);
  if (lookup == Lookup::by_name && !is_shell_builtin(invocation.name)) {
    if (std::optional<fs::path> dir = replacement_lookup(invocation.name)) {
      invocation.command = (*dir / invocation.name).string();
      invocation.script_path_dir = dir->string();
      lookup = invocation.lookup = Lookup::by_path;
    }
  }
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
    find_installer(argv, invocation);
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

std::optional<fs::path> Analyser::identify(Invocation& invocation, const Scope& scope) const {
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

bool Analyser::is_plain_system_program(const fs::path& file, const std::string& name) const {
  static constexpr std::array<std::string_view, 6> k_system_dirs = {
      "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin"};
  if (file == m_options.sandshim) {
    return true;
  }
  return file.filename() == name && one_of(k_system_dirs, file.parent_path().string());
}

std::optional<fs::path> Analyser::locate_program(const std::string& command,
                                                 const Scope& scope) const {
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

void Analyser::check_arguments(Argv argv, const Invocation& invocation, const Scope& scope) {
  std::string name = invocation.resolved_as.empty() ? invocation.name : invocation.resolved_as;
  if (auto access = engine_access_of(name, argv)) {
    add_finding(FindingKind::engine_access, *access, "", scope.enclosing_shell);
  }
  std::optional<std::string> hidden = hidden_command_of(name, argv);
  if (!hidden && name == "gdb" && invocation.name != "gdb") {
    hidden = invocation.name + " (gdb under another name)";  // its program is not followed
  }
  if (hidden) {
    add_finding(FindingKind::hidden_command, *hidden, "", scope.enclosing_shell);
  }
  if (copies_files(name)) {
    check_copies(name, argv, scope);
  }
  check_program_writes(name, argv, scope);
}

std::string Analyser::launcher_of(Argv argv, const std::string& name) {
  for (const LauncherSpec& spec : k_launchers) {
    if (spec.name != name) {
      continue;
    }
    if (spec.subcommand.empty()) {
      return name;
    }
    std::vector<size_t> operands = verb_operands(argv, name, 1);
    if (!operands.empty() && argv[operands[0]].value == spec.subcommand) {
      return name + " " + argv[operands[0]].value;
    }
  }
  return "";
}

std::vector<size_t> Analyser::verb_operands(Argv argv, const std::string& name, size_t count) {
  auto spec = std::find_if(k_verb_options.begin(), k_verb_options.end(),
                           [&](const VerbOptions& s) { return s.name == name; });
  std::vector<size_t> operands;
  for (size_t i = 1; i < argv.size() && operands.size() < count; ++i) {
    if (!is_option(argv[i])) {
      operands.push_back(i);
    } else if (spec != k_verb_options.end() && one_of(spec->with_value, argv[i].value)) {
      ++i;  // `uv --directory d sync`: d is the option's
    }
  }
  return operands;
}

namespace {

// pip, pip3, pip3.11: one installer.
bool is_pip_name(const std::string& name) {
  return name.starts_with("pip") && name.find_first_not_of("0123456789.", 3) == std::string::npos;
}

// pip's arguments doing the job of the installer's words after its verb, as written; with `…`
// when they do not carry over word for word.
std::string pip_arguments_for(const InstallerSpec& spec, Argv rest) {
  std::string out(spec.pip_verb);
  if (spec.rest == PipEquivalent::none || spec.rest == PipEquivalent::fixed) {
    return out;
  }
  for (const Word& word : rest) {
    if (spec.rest != PipEquivalent::all_words && is_option(word)) {
      return out + " …";
    }
    out += (spec.rest == PipEquivalent::requirement_files ? " -r " : " ") + word.source;
  }
  return out;
}

}  // namespace

void Analyser::find_installer(Argv argv, Invocation& invocation) {
  std::string name = is_pip_name(invocation.name) ? "pip" : invocation.name;
  std::vector<size_t> operands = verb_operands(argv, name, 2);
  for (const InstallerSpec& spec : k_installers) {
    size_t verbs = spec.subverb.empty() ? 1 : 2;
    if (spec.name != name || (spec.needs_host_shebang && invocation.shebang.empty()) ||
        operands.size() < verbs || argv[operands[0]].value != spec.verb ||
        (verbs == 2 && argv[operands[1]].value != spec.subverb)) {
      continue;
    }
    invocation.installer = invocation.name + " " + std::string(spec.verb) +
                           (verbs == 2 ? " " + std::string(spec.subverb) : "");
    invocation.pip_arguments = pip_arguments_for(spec, argv.subspan(operands[verbs - 1] + 1));
    return;
  }
}

std::string Analyser::shebang_interpreter(const Invocation& invocation,
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

bool Analyser::interpreter_file(const std::string& interpreter,
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

std::string Analyser::env_shebang_bypass(const std::vector<std::string>& words) const {
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

void Analyser::analyse_executed_script(const fs::path& file, size_t invocation,
                                       const Scope& scope) {
  if (!m_options.read_script) {
    return;
  }
  std::optional<std::string> text = m_options.read_script(file);
  if (!text || !is_shell_script(*text)) {
    return;
  }
  // /usr/bin/mvn is a program of the system as /usr/bin/java is: what it does inside (eval,
  // computed names, sourcing /etc/mavenrc) is no route the agent wrote.
  if (m_options.system_program && !is_written(file) && m_options.system_program(file)) {
    return;
  }
  analyse_script_text(*text, file, invocation, scope);
}

bool Analyser::is_shell_script(const std::string& text) {
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

bool Analyser::is_written(const fs::path& file) const {
  return std::any_of(m_written.begin(), m_written.end(),
                     [&](const fs::path& path) { return path == file.lexically_normal(); });
}

void Analyser::analyse_script_text(const std::string& text, const fs::path& file,
                                   std::optional<size_t> enclosing, const Scope& scope) {
  if (is_written(file)) {
    add_finding(FindingKind::unanalysable, file.filename().string(),
                "this command writes the script before running it", enclosing);
    return;
  }
  ++m_file_depth;
  analyse_script(text, enclosing, scope.depth + 1, m_sourcing == 0);
  --m_file_depth;
}

void Analyser::analyse_script_file(const Word& operand, const std::string& subject,
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

std::vector<std::string> Analyser::split_blanks(const std::string& text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = text.find_first_not_of(" \t\r", i);
    if (start == std::string::npos) {
      break;
    }
    size_t end = text.find_first_of(" \t\r", start);
    words.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    i = end == std::string::npos ? text.size() : end;
  }
  return words;
}

bool Analyser::is_real_sandshim(const std::string& command) const {
  if (!m_options.locate || m_options.sandshim.empty()) {
    return command.find('/') == std::string::npos || fs::path(command) == m_options.sandshim;
  }
  std::optional<fs::path> file = m_options.locate(command);
  std::error_code ec;
  return file && fs::equivalent(*file, m_options.sandshim, ec);
}

std::optional<Argv> Analyser::analyse_sandshim(Argv argv, Peel& peel, const Scope& scope,
                                               const SimpleCommand& command) {
  if (!is_real_sandshim(argv.front().value)) {
    record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
    return std::nullopt;
  }
  size_t index = record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
  auto subcommand =
      std::find_if(argv.begin() + 1, argv.end(), [](const Word& word) { return !is_option(word); });
  std::string name = subcommand == argv.end() ? "" : subcommand->value;
  if (name == "audit" && subcommand + 1 != argv.end()) {
    name += " " + (subcommand + 1)->value;
  }
  m_out.invocations[index].sandshim_subcommand = name;
  if (name == "run") {
    flag_loosening_options(argv);
    auto separator =
        std::find_if(argv.begin(), argv.end(), [](const Word& word) { return word.value == "--"; });
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

namespace {

// The images a run may name on its own: the host's toolchain on a read-only /usr (what a refusal
// names for a system tool) and the wrap image (`sandshim -c`'s). Both keep the sandbox: no
// network, no capabilities, the policy's limits; which other images exist is the config's.
bool is_sandbox_mode_image(std::string_view image) {
  return image == shim::k_host_image_mode || image == k_wrap_image;
}

// How many words of `sandshim run`'s options starting at argv[at] loosen nothing (0: it may):
// --dry-run; --wrap-shell, which `sandshim -c` passes (an agent may run that itself, and its
// shell writes no more than the agent's host shell does); --image of a sandbox mode above.
size_t harmless_run_option(Argv argv, size_t at) {
  const std::string& option = argv[at].value;
  if (argv[at].is_dynamic()) {
    return 0;
  }
  if (option == "--dry-run" || option == "--wrap-shell" ||
      (option.starts_with("--image=") && is_sandbox_mode_image(option.substr(8)))) {
    return 1;
  }
  bool image_follows = option == "--image" && at + 1 < argv.size() && !argv[at + 1].is_dynamic();
  return image_follows && is_sandbox_mode_image(argv[at + 1].value) ? 2 : 0;
}

}  // namespace

void Analyser::flag_loosening_options(Argv argv) {
  for (size_t at = 1; at < argv.size();) {
    const Word& word = argv[at];
    if (word.value == "--" && !word.is_dynamic()) {
      return;
    }
    if (size_t harmless = harmless_run_option(argv, at); harmless > 0) {
      at += harmless;
      continue;
    }
    if (word.is_dynamic() || is_option(word)) {
      add_finding(FindingKind::loosening_flag, "sandshim run " + excerpt(word.value), "",
                  std::nullopt);
    }
    ++at;
  }
}

}  // namespace sandshim::hooks::analysis
