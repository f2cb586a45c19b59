#include "hooks/word_values.hpp"

#include <algorithm>
#include <array>
#include <regex>
#include <string_view>

#include "hooks/interpreters.hpp"
#include "hooks/path_patterns.hpp"

namespace sandshim::hooks {

namespace {

// More values than this for one word and it is taken as unknown.
constexpr size_t k_max_values = 32;

const std::string k_number(1, k_any_name);

bool name_char(char c, bool first) {
  return first ? is_name_start(c) : is_name_char(c);
}

// The index just past the bracket that closes the one at `open`, by depth alone.
size_t closing(std::string_view text, size_t open, char open_char, char close_char) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == open_char) {
      ++depth;
    } else if (text[i] == close_char && --depth == 0) {
      return i + 1;
    }
  }
  return text.size();
}

// Parameters bash sets to numbers, whatever the script does.
bool numeric_parameter(std::string_view name) {
  static constexpr std::array<std::string_view, 15> k_numeric = {
      "#",   "?",    "$",    "!",       "-",       "RANDOM",       "LINENO",       "SECONDS",
      "UID", "EUID", "PPID", "BASHPID", "SRANDOM", "EPOCHSECONDS", "EPOCHREALTIME"};
  return std::find(k_numeric.begin(), k_numeric.end(), name) != k_numeric.end();
}

// Every combination of a part from each list, in order; nullopt past the cap.
bool append_product(std::vector<std::string>& parts, const std::vector<std::string>& options) {
  std::vector<std::string> next;
  for (const std::string& part : parts) {
    for (const std::string& option : options) {
      next.push_back(part + option);
    }
  }
  parts = std::move(next);
  return parts.size() <= k_max_values;
}

// Parameters, substitutions or arithmetic: a word without them is only literal text.
bool expands_anything(const Word& word) {
  return !word.parameters.empty() || word.substitutes_commands || word.arithmetic;
}

// Plain text up to the next expansion (a character at least), its globs marked when they apply.
std::vector<std::string> literal_values(std::string_view text, size_t& i, bool expands, bool glob) {
  size_t start = i;
  while (i < text.size() && !(expands && (text[i] == '$' || text[i] == '`'))) {
    ++i;
  }
  i = i == start ? i + 1 : i;
  std::string literal = literal_text(text.substr(start, i - start));
  return {glob ? marked_globs(literal) : literal};
}

// The `value` of `NAME=value` as a word of its own; `equals` is where the source's `=` is.
Word assigned_value(const Word& word, size_t equals) {
  Word value = word;
  value.source = word.source.substr(equals + 1);
  size_t value_equals = word.value.find('=');
  value.value = value_equals == std::string::npos ? "" : word.value.substr(value_equals + 1);
  return value;
}

}  // namespace

void VariableValues::learn(const ShellParse& parse) {
  NameSet looped;
  for (int pass = 0; pass < 2; ++pass) {  // twice: `d=$x/y` after `for x in …` sees x's words
    for (const SimpleCommand& command : parse.commands) {
      learn_command(command);
    }
    for (const LoopWords& loop : parse.loops) {
      looped.insert(loop.name);
      if (!loop.listed) {
        set_unknown(loop.name, "for " + loop.name);
        continue;
      }
      for (const Word& word : loop.words) {
        Expansion expansion = expand(word);
        if (!expansion.unknown.empty()) {
          set_unknown(loop.name, "for " + loop.name + " in " + expansion.unknown);
        }
        for (const std::string& pattern : expansion.patterns) {
          add_value(loop.name, pattern);
        }
      }
    }
  }
  for (const std::string& name : parse.loop_variables) {
    if (!looped.contains(name)) {
      add_value(name, k_number);  // `{fd}>file`: a descriptor number
    }
  }
}

void VariableValues::learn_command(const SimpleCommand& command) {
  for (const Word& word : command.assignments) {
    assign(word, "");
  }
  if (command.words.empty()) {
    return;
  }
  const std::string& builtin = command.words[0].value;
  bool declares = builtin == "export" || builtin == "declare" || builtin == "typeset" ||
                  builtin == "local" || builtin == "readonly";
  bool reference = false;
  for (size_t i = 1; i < command.words.size(); ++i) {
    const Word& word = command.words[i];
    if (declares && word.value.starts_with('-')) {
      reference = reference || word.value.find('n') != std::string::npos;
    } else if (declares) {
      assign(word, reference ? builtin + " -n" : "");
    } else if ((builtin == "read" || builtin == "mapfile" || builtin == "readarray" ||
                builtin == "getopts") &&
               is_name(word.value)) {
      set_unknown(word.value, builtin + " " + word.value);
    } else if (builtin == "printf" && word.value == "-v" && i + 1 < command.words.size()) {
      set_unknown(command.words[i + 1].value, "printf -v " + command.words[i + 1].value);
    } else if (builtin == "unset" && is_name(word.value)) {
      add_value(word.value, "");
    }
  }
}

// `NAME=value` (a declaration's operand too): its value's patterns, or unknown.
void VariableValues::assign(const Word& word, const std::string& how) {
  size_t equals = word.source.find('=');
  std::string_view name_part = std::string_view(word.source).substr(0, equals);
  if (equals == std::string::npos) {
    if (is_name(word.value)) {
      add_value(word.value, "");  // `local f`: empty
    }
    return;
  }
  std::string name(name_part.ends_with('+') ? name_part.substr(0, name_part.size() - 1)
                                            : name_part);
  if (!is_name(name)) {
    size_t bracket = name.find('[');
    set_unknown(name.substr(0, bracket), name + "=…");
    return;
  }
  if (!how.empty() || name_part.ends_with('+') || word.source.substr(equals + 1).starts_with('(')) {
    set_unknown(name, how.empty() ? std::string(word.source.substr(0, equals + 1)) + "…" : how);
    return;
  }
  Expansion expansion = expand(assigned_value(word, equals), false);
  if (!expansion.unknown.empty()) {
    set_unknown(name, name + "=" + expansion.unknown);
    return;
  }
  for (const std::string& pattern : expansion.patterns) {
    add_value(name, pattern);
  }
}

void VariableValues::set_unknown(const std::string& name, const std::string& how) {
  m_unknown.emplace(name, how);
}

void VariableValues::add_value(const std::string& name, const std::string& pattern) {
  std::vector<std::string>& values = m_values[name];
  if (std::find(values.begin(), values.end(), pattern) == values.end()) {
    values.push_back(pattern);
  }
}

std::vector<std::string> VariableValues::values_of(const std::string& name,
                                                   std::string& unknown) const {
  if (auto found = m_unknown.find(name); found != m_unknown.end()) {
    unknown = unknown.empty() ? "$" + name + " (set by `" + found->second + "`)" : unknown;
    return {k_unknown_pattern};
  }
  std::vector<std::string> values;
  if (auto found = m_values.find(name); found != m_values.end()) {
    values = found->second;
  }
  if (std::optional<std::string> initial = initial_value(name, unknown)) {
    values.push_back(*initial);
  } else {
    return {k_unknown_pattern};
  }
  return values;
}

// What a variable holds before the script sets it: the agent's environment, or what bash
// gives it; nullopt when that is only known as the command runs.
std::optional<std::string> VariableValues::initial_value(const std::string& name,
                                                         std::string& unknown) const {
  if (name == "HOME") {
    return m_context.home.string();
  }
  if (name == "PWD") {
    return m_context.cwd.string();
  }
  if (numeric_parameter(name)) {
    return k_number;
  }
  if (!is_name(name) || name == "OLDPWD" || name == "REPLY" || name == "BASH_REMATCH") {
    unknown = unknown.empty() ? "$" + name : unknown;
    return std::nullopt;
  }
  std::optional<std::string> value = m_context.variable ? m_context.variable(name) : std::nullopt;
  return literal_text(value.value_or(""));
}

// `$(…)` whose output sandshim knows the shape of: mktemp's new file, pwd.
std::vector<std::string> VariableValues::substitution(std::string_view script,
                                                      std::string& unknown) const {
  static const std::regex k_mktemp(
      R"(^\s*mktemp((\s+-[dqut]+)*)(\s+([A-Za-z0-9._%+-]*?)X{3,}([A-Za-z0-9._%+-]*))?\s*$)");
  static const std::regex k_pwd(R"(^\s*pwd(\s+-[LP])?\s*$)");
  std::string text(script);
  if (std::smatch match; std::regex_match(text, match, k_mktemp)) {
    std::string tmp = m_context.variable ? m_context.variable("TMPDIR").value_or("") : "";
    std::string name = match[3].matched ? match[4].str() + k_number + match[5].str()
                                        : "tmp." + k_number;  // mktemp's own template
    return {literal_text(tmp.empty() ? "/tmp" : tmp) + "/" + name};
  }
  if (std::regex_match(text, k_pwd)) {
    return {m_context.cwd.string()};
  }
  unknown = unknown.empty() ? "$(" + (text.size() > 40 ? text.substr(0, 37) + "..." : text) + ")"
                            : unknown;
  return {k_unknown_pattern};
}

// `${NAME:-WORD}` and kin: NAME's values and WORD's; nullopt for any other operator.
std::optional<std::vector<std::string>> VariableValues::with_default(const Word& word,
                                                                     const std::string& inner,
                                                                     std::string& unknown) const {
  size_t end = 0;
  while (end < inner.size() && name_char(inner[end], end == 0)) {
    ++end;
  }
  std::string_view rest = std::string_view(inner).substr(end);
  size_t op = rest.starts_with(':') ? 2 : 1;
  if (end == 0 || rest.size() < op ||
      std::string_view("-=+?").find(rest[op - 1]) == std::string_view::npos) {
    return std::nullopt;
  }
  std::vector<std::string> values;
  if (rest[op - 1] == '+') {
    values.emplace_back("");
  } else {
    values = values_of(inner.substr(0, end), unknown);
  }
  if (rest[op - 1] != '?') {
    Word other = word;
    other.value = std::string(rest.substr(op));
    other.source = other.value;
    Expansion expansion = expand(other, false);
    unknown = unknown.empty() ? expansion.unknown : unknown;
    values.insert(values.end(), expansion.patterns.begin(), expansion.patterns.end());
  }
  return values;
}

Expansion VariableValues::expand(const Word& word, bool globs) const {
  bool glob = globs && word.globs;
  Expansion result;
  std::vector<std::string> texts = glob ? brace_expanded(word.value) : std::vector{word.value};
  for (const std::string& text : texts) {
    for (const std::string& part : expand_text(word, text, glob, result.unknown)) {
      std::vector<std::string> patterns = glob ? finished_globs(part) : std::vector{part};
      result.patterns.insert(result.patterns.end(), patterns.begin(), patterns.end());
    }
  }
  if (result.patterns.size() > k_max_values) {
    result.patterns = {k_unknown_pattern};
  }
  return result;
}

// One brace alternative of `word`, piece by piece, before pathname expansion.
std::vector<std::string> VariableValues::expand_text(const Word& word, const std::string& text,
                                                     bool glob, std::string& unknown) const {
  std::vector<std::string> parts = {""};
  size_t i = tilde_prefix(word, text, parts, unknown);
  bool fits = true;
  while (i < text.size() && fits) {
    fits = append_product(parts, piece_values(word, text, i, glob, unknown));
  }
  if (!fits) {
    unknown = unknown.empty() ? "`" + word.source + "` (too many values)" : unknown;
    parts = {k_unknown_pattern};
  }
  return parts;
}

// `~` and `~/…` are the home directory, `~user` an unknown one; returns where the rest starts.
size_t VariableValues::tilde_prefix(const Word& word, const std::string& text,
                                    std::vector<std::string>& parts, std::string& unknown) const {
  if (word.source.starts_with('~') && (text == "~" || text.starts_with("~/"))) {
    parts = {m_context.home.string()};
    return 1;
  }
  if (word.source.starts_with('~') && text.starts_with('~')) {
    unknown = unknown.empty() ? "~user" : unknown;
    parts = {k_unknown_pattern};
    return std::min(text.find('/'), text.size());
  }
  return 0;
}

// The values of the expansion or the literal text at `i`; moves `i` past it.
std::vector<std::string> VariableValues::piece_values(const Word& word, const std::string& text,
                                                      size_t& i, bool glob,
                                                      std::string& unknown) const {
  bool expands = expands_anything(word);
  if (expands && text[i] == '$') {
    if (std::optional<std::vector<std::string>> values = dollar_values(word, text, i, unknown)) {
      return *values;
    }
  }
  if (expands && text[i] == '`') {
    size_t start = i;
    i = std::min(text.find('`', i + 1), text.size() - 1) + 1;
    return substitution(std::string_view(text).substr(start + 1, i - start - 2), unknown);
  }
  return literal_values(text, i, expands, glob);
}

// `$((…))`, `$(…)`, `$[…]`, `${…}`, `$name` or a special parameter at `i`; nullopt for a `$`
// that starts none of them (it is literal text then).
std::optional<std::vector<std::string>> VariableValues::dollar_values(const Word& word,
                                                                      const std::string& text,
                                                                      size_t& i,
                                                                      std::string& unknown) const {
  size_t start = i;
  char next = i + 1 < text.size() ? text[i + 1] : '\0';
  if (next == '(' || next == '[' || next == '{') {
    return bracketed_values(word, text, i, unknown);
  }
  if (name_char(next, true)) {
    i += 2;
    while (i < text.size() && name_char(text[i], false)) {
      ++i;
    }
    return values_of(text.substr(start + 1, i - start - 1), unknown);
  }
  if (next != '\0' && std::string_view("0123456789@*#?$!-").find(next) != std::string_view::npos) {
    i += 2;
    return values_of(std::string(1, next), unknown);
  }
  return std::nullopt;
}

// `$((…))`, `$(…)`, `$[…]` or `${…}` at `i`; moves `i` past the bracket that closes it.
std::vector<std::string> VariableValues::bracketed_values(const Word& word, const std::string& text,
                                                          size_t& i, std::string& unknown) const {
  size_t start = i;
  char next = text[i + 1];
  if (next == '(' && i + 2 < text.size() && text[i + 2] == '(') {
    i = closing(text, i + 1, '(', ')');
    return {k_number};
  }
  if (next == '(') {
    i = closing(text, i + 1, '(', ')');
    return substitution(std::string_view(text).substr(start + 2, i - start - 3), unknown);
  }
  if (next == '[') {
    i = closing(text, i + 1, '[', ']');
    return {k_number};
  }
  i = closing(text, i + 1, '{', '}');
  return braced_values(word, text.substr(start + 2, i - start - 3), unknown);
}

// `${#x}` is a number, `${x}` x's values, `${x:-word}` and the like theirs or word's.
std::vector<std::string> VariableValues::braced_values(const Word& word, const std::string& inner,
                                                       std::string& unknown) const {
  if (inner.starts_with('#') && inner.size() > 1) {
    return {k_number};
  }
  if (is_name(inner) || (inner.size() == 1 && !is_name(inner))) {
    return values_of(inner, unknown);
  }
  if (std::optional<std::vector<std::string>> defaulted = with_default(word, inner, unknown)) {
    return *defaulted;
  }
  unknown = unknown.empty() ? "${" + inner + "}" : unknown;
  return {k_unknown_pattern};
}

}  // namespace sandshim::hooks
