// The walk: each script parsed, its facts gathered, then each simple command dispatched to
// the handler of its command name.

#include "hooks/shell_analysis.hpp"

#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

void Analyser::analyse_script(std::string_view script, std::optional<size_t> enclosing, int depth,
                              bool follows_path) {
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
  scope.follows_path = follows_path;
  size_t outer_path = m_replacement_path.size();
  if (scope.follows_path) {
    collect_replacement_path(parse);
  }
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
  m_replacement_path.resize(outer_path);
}

std::unordered_map<std::string_view, Analyser::Handler> Analyser::named_handlers() {
  return {{"env", &Analyser::peel_env},
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
          {"script", &Analyser::analyse_script_command},
          {"gdb", &Analyser::analyse_gdb},
          {"gdbtui", &Analyser::analyse_gdb},
          {"gdb-multiarch", &Analyser::analyse_gdb}};
}

void Analyser::add_family_handlers(std::unordered_map<std::string_view, Handler>& map) {
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
}

const std::unordered_map<std::string_view, Analyser::Handler>& Analyser::handlers() {
  static const std::unordered_map<std::string_view, Handler> table = [] {
    std::unordered_map<std::string_view, Handler> map = named_handlers();
    add_family_handlers(map);
    return map;
  }();
  return table;
}

NameSet Analyser::assigned_names(const ShellParse& parse) {
  NameSet names(parse.loop_variables.begin(), parse.loop_variables.end());
  for (const SimpleCommand& command : parse.commands) {
    for (const Word& word : command.assignments) {
      names.insert(assignment_name(word.source).value_or(""));
    }
    add_builtin_targets(command.words, names);
  }
  return names;
}

void Analyser::add_builtin_targets(const std::vector<Word>& words, NameSet& names) {
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

void Analyser::analyse_simple(const SimpleCommand& command, const Scope& scope) {
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

void Analyser::analyse_argv(Argv argv, Peel peel, const Scope& scope,
                            const SimpleCommand& command) {
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

void Analyser::add_finding(FindingKind kind, std::string subject, std::string detail,
                           std::optional<size_t> enclosing) {
  m_out.findings.push_back(
      Finding{kind, std::move(subject), std::move(detail), enclosing, m_file_depth > 0});
}

void Analyser::refuse_computed(const std::string& subject, const Scope& scope) {
  add_finding(FindingKind::unanalysable, subject,
              "its arguments are only known when the command runs", scope.enclosing_shell);
}

}  // namespace sandshim::hooks::analysis

namespace sandshim::hooks {

using namespace analysis;  // Analyser's helpers

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
