// Builtins that change how later commands are found or run text as code: eval, source,
// alias, hash, unset, declare, read, mapfile, printf -v, getopts, complete -C, bind, enable, trap.

#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

std::optional<Argv> Analyser::refuse_eval(Argv /*argv*/, Peel& /*peel*/, const Scope& scope,
                                          const SimpleCommand& /*command*/) {
  add_finding(FindingKind::unanalysable, "eval",
              "it runs text that only exists when the command runs", scope.enclosing_shell);
  return std::nullopt;
}

std::optional<Argv> Analyser::check_source(Argv argv, Peel& /*peel*/, const Scope& scope,
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
    ++m_sourcing;
    analyse_script_file(*file, argv.front().value, scope.enclosing_shell, scope);
    --m_sourcing;
  }
  return std::nullopt;
}

std::optional<Word> Analyser::sourced_file(const Word& word) const {
  bool expands = word.is_dynamic() || word.value.starts_with('~');
  if (expands && !word.globs && !word.substitutes_commands && !word.arithmetic) {
    if (std::optional<fs::path> path = home_or_absolute_path(word.value, word.quoted)) {
      Word resolved;
      resolved.value = path->string();
      return resolved;
    }
  }
  return word.is_dynamic() ? std::nullopt : std::optional<Word>(word);
}

std::optional<Argv> Analyser::analyse_alias(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_hash(Argv argv, Peel& /*peel*/, const Scope& scope,
                                         const SimpleCommand& /*command*/) {
  bool pins = std::any_of(argv.begin() + 1, argv.end(), [](const Word& word) {
    return is_option(word) && word.value[1] != '-' && word.value.find('p') != std::string::npos;
  });
  if (pins) {
    add_finding(FindingKind::hash_pinning, "hash -p", "", scope.enclosing_shell);
  }
  return std::nullopt;
}

std::optional<Argv> Analyser::check_unset_builtin(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_declaration(Argv argv, Peel& /*peel*/, const Scope& scope,
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

void Analyser::check_nameref(const Word& word, const Scope& scope) {
  std::string target = word.value.substr(word.value.find('=') + 1);
  if (word.is_dynamic()) {
    refuse_computed("declare -n", scope);
  } else {
    check_runtime_assignment(target, "declare -n " + excerpt(word.value), scope);
  }
}

std::optional<Argv> Analyser::check_read(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_mapfile(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_printf(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_getopts(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_completion(Argv argv, Peel& /*peel*/, const Scope& scope,
                                               const SimpleCommand& /*command*/) {
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i].value == "-C") {
      analyse_string_command(argv[i + 1], argv.front().value + " -C", scope);
    }
  }
  return std::nullopt;
}

std::optional<Argv> Analyser::check_bind(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::check_enable(Argv argv, Peel& /*peel*/, const Scope& scope,
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

std::optional<Argv> Analyser::analyse_trap(Argv argv, Peel& /*peel*/, const Scope& scope,
                                           const SimpleCommand& /*command*/) {
  auto action =
      std::find_if(argv.begin() + 1, argv.end(), [](const Word& word) { return !is_option(word); });
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

}  // namespace sandshim::hooks::analysis
