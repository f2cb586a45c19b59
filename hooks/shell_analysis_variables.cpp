// Assignments that change how programs are found or what they run: PATH (replaced, or
// directories put in front of it), protected and command-valued variables.

#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

void Analyser::check_prepended() {
  for (const Prepended& prepended : m_prepended) {
    std::string shadowed = shadowed_program(prepended.directory);
    if (!shadowed.empty()) {
      add_finding(FindingKind::path_override, prepended.subject,
                  "it puts " + shadowed + " in front of the shims", prepended.enclosing_shell);
    }
  }
}

void Analyser::check_assignment(const Word& word, const Scope& scope) {
  std::string name = assignment_name(word.source).value_or("");
  size_t equals = word.source.find('=');
  std::string_view value = std::string_view(word.source).substr(equals + 1);
  bool appends = equals > 0 && word.source[equals - 1] == '+';
  if (name == "PATH" && !appends && !appends_to_path(value)) {
    if (!remember_prepended(word, scope)) {
      add_finding(FindingKind::path_override, "PATH=" + excerpt(value), "", scope.enclosing_shell);
      m_out.findings.back().followed = scope.follows_path && replacement_directories(word);
    }
  } else if (is_protected_variable(name)) {
    add_finding(FindingKind::protected_variable, name, "", scope.enclosing_shell);
  } else if (is_command_variable(name) && !is_inert_assignment(name, word)) {
    add_finding(FindingKind::command_variable, name, "", scope.enclosing_shell);
    m_out.findings.back().computed = word.is_dynamic();
  }
}

bool Analyser::remember_prepended(const Word& word, const Scope& scope) {
  if (word.substitutes_commands || word.arithmetic || word.evaluates_later || word.globs) {
    return false;
  }
  std::string value = word.value.substr(word.value.find('=') + 1);
  std::optional<std::vector<fs::path>> directories = path_directories(word, true);
  if (!directories) {
    return false;
  }
  for (const fs::path& dir : *directories) {
    m_prepended.push_back({dir, "PATH=" + excerpt(value), scope.enclosing_shell});
  }
  return true;
}

std::optional<std::vector<fs::path>> Analyser::path_directories(const Word& word,
                                                                bool until_path) const {
  std::string value = word.value.substr(word.value.find('=') + 1);
  std::vector<fs::path> directories;
  for (size_t start = 0; start <= value.size();) {
    size_t colon = std::min(value.find(':', start), value.size());
    std::string part = value.substr(start, colon - start);
    if (until_path && (part == "$PATH" || part == "${PATH}")) {
      return directories;
    }
    std::optional<fs::path> dir = home_or_absolute_path(part, word.quoted);
    if (!dir) {
      return std::nullopt;  // an empty or relative entry: the working directory
    }
    directories.push_back(*dir);
    start = colon + 1;
  }
  return until_path ? std::nullopt : std::optional(directories);
}

void Analyser::collect_replacement_path(const ShellParse& parse) {
  auto collect = [&](const Word& word) {
    if (assignment_name(word.source) == "PATH") {
      std::vector<fs::path> dirs = replacement_directories(word).value_or(std::vector<fs::path>{});
      m_replacement_path.insert(m_replacement_path.end(), dirs.begin(), dirs.end());
    }
  };
  for (const SimpleCommand& command : parse.commands) {
    std::for_each(command.assignments.begin(), command.assignments.end(), collect);
    if (!command.words.empty() && one_of(k_declarations, command.words[0].value)) {
      std::for_each(command.words.begin(), command.words.end(), collect);
    }
  }
}

std::optional<std::vector<fs::path>> Analyser::replacement_directories(const Word& word) const {
  size_t equals = word.source.find('=');
  bool appends = equals > 0 && word.source[equals - 1] == '+';
  if (appends || word.substitutes_commands || word.arithmetic || word.evaluates_later ||
      word.globs || !word.parameters.empty()) {
    return std::nullopt;
  }
  return path_directories(word, false);
}

std::optional<fs::path> Analyser::replacement_lookup(const std::string& name) const {
  for (const fs::path& dir : m_replacement_path) {
    if (m_options.locate((dir / name).string())) {
      return dir;
    }
  }
  return std::nullopt;
}

std::string Analyser::shadowed_program(const fs::path& directory) const {
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

bool Analyser::is_native_program(const fs::path& file, const std::string& name) const {
  if (classify_name(name, m_options.shimmed) != CommandClass::other || is_shell_name(name) ||
      !m_options.read_script || m_options.read_script(file)) {
    return false;  // a script: its #! or its text would have to be read in that position
  }
  std::optional<std::string> known =
      m_options.known_program_of ? m_options.known_program_of(file) : std::nullopt;
  return !known || (classify_name(*known, m_options.shimmed) == CommandClass::other &&
                    !is_shell_name(*known) && !is_engine_client(*known) && !is_loader(*known));
}

bool Analyser::is_inert_assignment(const std::string& name, const Word& word) {
  if (word.is_dynamic() || word.evaluates_later) {
    return false;
  }
  // Emptied, such a variable names no command of the agent's (configure's `MAKEFLAGS=`).
  std::string value = literal_value(word);
  bool no_startup_file = (name == "BASH_ENV" || name == "ENV") && value == "/dev/null";
  return value.empty() || no_startup_file || runs_only_inert_program(name, value) ||
         is_inert_prompt(name, value);
}

std::string Analyser::literal_value(const Word& word) {
  if (word.substitutes_commands || word.arithmetic || word.evaluates_later ||
      !word.parameters.empty() || word.globs) {
    return "";
  }
  return word.value.substr(word.value.find('=') + 1);
}

void Analyser::check_runtime_assignment(const std::string& name, const std::string& how,
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

void Analyser::check_unset(const std::string& name, const Scope& scope) {
  if (name == "PATH") {
    add_finding(FindingKind::path_override, "unset PATH", "", scope.enclosing_shell);
  } else if (is_protected_variable(name)) {
    add_finding(FindingKind::protected_variable, name, "", scope.enclosing_shell);
  }
}

}  // namespace sandshim::hooks::analysis
