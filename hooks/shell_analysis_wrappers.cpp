// Wrappers that run the command after their options (env, exec, command, nice, timeout,
// xargs, flock, watch, find -exec, sudo…): each returns the command it goes on to run.

#include "hooks/gdb_rules.hpp"
#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

std::optional<Argv> Analyser::peel_wrapper(Argv argv, Peel& peel, const Scope& /*scope*/,
                                           const SimpleCommand& /*command*/) {
  std::string name = last_component(argv.front().value);
  const WrapperSpec& spec = *std::find_if(wrapper_specs().begin(), wrapper_specs().end(),
                                          [&](const WrapperSpec& s) { return s.name == name; });
  peel.wrapper = name;
  peel.applet = peel.applet || name == "busybox";
  return argv.subspan(command_index(argv, spec));
}

std::optional<Argv> Analyser::peel_xargs(Argv argv, Peel& peel, const Scope& scope,
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

Argv Analyser::runtime_words(Argv argv, const std::string& replace) {
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

std::optional<Argv> Analyser::peel_flock(Argv argv, Peel& peel, const Scope& scope,
                                         const SimpleCommand& command) {
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i].value == "-c" || argv[i].value == "--command") {
      analyse_string_command(argv[i + 1], "flock -c", scope);
      return std::nullopt;
    }
  }
  return peel_wrapper(argv, peel, scope, command);
}

std::optional<Argv> Analyser::peel_watch(Argv argv, Peel& peel, const Scope& scope,
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

std::optional<Argv> Analyser::analyse_script_command(Argv argv, Peel& peel, const Scope& scope,
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

std::optional<Argv> Analyser::analyse_gdb(Argv argv, Peel& peel, const Scope& scope,
                                          const SimpleCommand& /*command*/) {
  record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
  std::optional<Argv> inferior = gdb_hidden_command(argv) ? std::nullopt : gdb_inferior(argv);
  if (!inferior) {
    return std::nullopt;
  }
  peel.wrapper = "gdb";
  const Word& program = inferior->front();
  bool in_cwd = !program.is_dynamic() && program.value.find('/') == std::string::npos &&
                m_options.locate && m_options.locate("./" + program.value);
  if (!in_cwd) {
    return inferior;
  }
  std::vector<Word>& words = m_owned_words.emplace_back(inferior->begin(), inferior->end());
  words.front().value = "./" + program.value;
  return words;
}

std::optional<Argv> Analyser::refuse_unfollowed(Argv argv, Peel& /*peel*/, const Scope& scope,
                                                const SimpleCommand& /*command*/) {
  add_finding(FindingKind::unanalysable, last_component(argv.front().value),
              "it runs commands later, elsewhere or from its own input, where sandshim cannot "
              "follow them",
              scope.enclosing_shell);
  return std::nullopt;
}

std::optional<Argv> Analyser::peel_env(Argv argv, Peel& peel, const Scope& scope,
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

bool Analyser::apply_env_option(Argv argv, size_t& i, Peel& peel, const Scope& scope) {
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

bool Analyser::apply_env_short_options(Argv argv, size_t& i, Peel& peel, const Scope& scope) {
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

std::string Analyser::next_value(Argv argv, size_t& i) {
  return ++i < argv.size() ? argv[i].value : "";
}

void Analyser::clear_environment(Peel& peel) {
  peel.clears_environment = true;
  peel.wrapper = "env -i";
}

void Analyser::refuse_split_string(const Scope& scope) {
  add_finding(FindingKind::unanalysable, "env -S", "it splits a string into a command",
              scope.enclosing_shell);
}

std::optional<Argv> Analyser::peel_exec(Argv argv, Peel& peel, const Scope& scope,
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

std::optional<Argv> Analyser::peel_command(Argv argv, Peel& peel, const Scope& /*scope*/,
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

std::optional<Argv> Analyser::peel_builtin(Argv argv, Peel& /*peel*/, const Scope& /*scope*/,
                                           const SimpleCommand& /*command*/) {
  return argv.subspan(1);
}

std::optional<Argv> Analyser::record_privileged(Argv argv, Peel& peel, const Scope& scope,
                                                const SimpleCommand& /*command*/) {
  peel.privileged = true;
  record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
  return std::nullopt;
}

std::optional<Argv> Analyser::analyse_find(Argv argv, Peel& peel, const Scope& scope,
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

}  // namespace sandshim::hooks::analysis
