// Host shells, which are transparent: a -c script, a script file, a here-document or a
// command string a program hands to a shell is analysed like the command line itself.

#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

void Analyser::analyse_string_command(const Word& text, const std::string& subject,
                                      const Scope& scope) {
  if (text.is_dynamic()) {
    refuse_computed(subject, scope);
    return;
  }
  analyse_script(text.value, scope.enclosing_shell, scope.depth + 1);
}

std::optional<Argv> Analyser::analyse_shell(Argv argv, Peel& peel, const Scope& scope,
                                            const SimpleCommand& command) {
  size_t shell = record_program(argv, peel, scope, lookup_of(argv.front().value, peel));
  ShellArguments arguments = parse_shell_arguments(argv);
  std::string name = argv.front().value;
  if (arguments.rcfile) {
    analyse_script_file(argv[*arguments.rcfile], name + " --rcfile", shell, scope);
  }
  if (arguments.computed_options) {
    add_finding(FindingKind::unanalysable, name, "its options are only known when the command runs",
                shell);
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

void Analyser::analyse_inline_script(const Word& script, const std::string& subject, size_t shell,
                                     const Scope& scope) {
  bool computed =
      script.substitutes_commands ||
      std::any_of(script.parameters.begin(), script.parameters.end(),
                  [&](const std::string& name) { return scope.assigned.contains(name); });
  if (computed) {
    add_finding(FindingKind::unanalysable, subject, "its script is computed when the command runs",
                shell);
    return;
  }
  analyse_script(script.value, shell, scope.depth + 1);
}

void Analyser::analyse_standard_input_script(const SimpleCommand& command, const std::string& name,
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

}  // namespace sandshim::hooks::analysis
