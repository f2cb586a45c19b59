// Facts about a whole script gathered before its commands are judged: literal paths, `cd`
// targets, directories appended to PATH, and strings bash evaluates again later.

#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

std::optional<fs::path> Analyser::literal_path(const Word& word, const fs::path& base) const {
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

std::optional<fs::path> Analyser::home_or_absolute_path(const std::string& text,
                                                        bool quoted) const {
  std::string rest;
  std::string_view prefixes[] = {"$HOME", "${HOME}", "~"};
  for (std::string_view prefix : prefixes) {
    bool tilde = prefix == "~";
    if (text.starts_with(prefix) && (text.size() == prefix.size() || text[prefix.size()] == '/') &&
        !(tilde && quoted) && !m_options.home.empty()) {
      rest = m_options.home.string() + text.substr(prefix.size());
    }
  }
  if (rest.empty() && text.starts_with('/')) {
    rest = text;
  }
  if (rest.empty() || rest.find_first_of("$`") != std::string::npos) {
    return std::nullopt;
  }
  return fs::path(rest).lexically_normal();
}

void Analyser::collect_directories(const ShellParse& parse, Scope& scope) const {
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

void Analyser::collect_cd(const std::vector<Word>& words, Scope& scope) const {
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

void Analyser::collect_appended_path(const Word& word, Scope& scope) const {
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

void Analyser::check_late_evaluation(const ShellParse& parse, const Scope& scope) {
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

bool Analyser::holds_code(const Word& word) {
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

bool Analyser::starts_code(const std::string& text, size_t i) {
  return text[i] == '`' ||
         (text[i] == '$' && i + 1 < text.size() && (text[i + 1] == '(' || text[i + 1] == '['));
}

bool Analyser::starts_code_at_any(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (starts_code(text, i)) {
      return true;
    }
  }
  return false;
}

void Analyser::check_subscripts(Argv words, const Scope& scope) {
  for (const Word& word : words) {
    bool subscript = word.value.find('[') != std::string::npos;
    if (subscript &&
        (word.value.find("$(") != std::string::npos || word.value.find('`') != std::string::npos)) {
      add_finding(FindingKind::unanalysable, excerpt(word.value),
                  "bash evaluates the subscript, $(…) included, when the command runs",
                  scope.enclosing_shell);
    }
  }
}

}  // namespace sandshim::hooks::analysis
