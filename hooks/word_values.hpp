#pragma once

// What a shell word may expand to, as path patterns (hooks/path_patterns.hpp), so that a write
// through a variable (`f=~/.claude/settings.json; > "$f"`) is judged by the file it names. A
// variable's values are every value the script may give it, and the agent's environment's: a
// union, so the order of assignments never hides one. What only the running command knows
// (`read`, `$(…)`, `for f; do`) is an unknown value, named, so a write to it can fail closed.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hooks/shell_parser.hpp"

namespace sandshim::hooks {

struct Expansion {
  std::vector<std::string> patterns;
  std::string unknown;  // the first construct only the running command knows: "$f", "$(…)"
};

struct ValueContext {
  std::filesystem::path home;  // ~ and $HOME
  std::filesystem::path cwd;   // $PWD, $(pwd)
  // The agent's environment, by name; empty: an environment with nothing set.
  std::function<std::optional<std::string>(const std::string& name)> variable;
};

class VariableValues {
 public:
  explicit VariableValues(ValueContext context) : m_context(std::move(context)) {}

  // Learns what the script's assignments, declarations, `read`s and loops may set. Called for
  // every script the analysis reads (`bash -c` ones too): the values only ever grow.
  void learn(const ShellParse& parse);

  // The patterns `word` may expand to; `globs`: pathname expansion applies (not for the value
  // of an assignment).
  Expansion expand(const Word& word, bool globs = true) const;

 private:
  void learn_command(const SimpleCommand& command);
  void assign(const Word& word, const std::string& how);
  void set_unknown(const std::string& name, const std::string& how);
  void add_value(const std::string& name, const std::string& pattern);
  std::vector<std::string> values_of(const std::string& name, std::string& unknown) const;
  std::optional<std::string> initial_value(const std::string& name, std::string& unknown) const;
  std::optional<std::vector<std::string>> with_default(const Word& word, const std::string& inner,
                                                       std::string& unknown) const;
  std::vector<std::string> substitution(std::string_view script, std::string& unknown) const;
  std::vector<std::string> expand_text(const Word& word, const std::string& text, bool glob,
                                       std::string& unknown) const;
  size_t tilde_prefix(const Word& word, const std::string& text, std::vector<std::string>& parts,
                      std::string& unknown) const;
  std::vector<std::string> piece_values(const Word& word, const std::string& text, size_t& i,
                                        bool glob, std::string& unknown) const;
  std::optional<std::vector<std::string>> dollar_values(const Word& word, const std::string& text,
                                                        size_t& i, std::string& unknown) const;
  std::vector<std::string> bracketed_values(const Word& word, const std::string& text, size_t& i,
                                            std::string& unknown) const;
  std::vector<std::string> braced_values(const Word& word, const std::string& inner,
                                         std::string& unknown) const;

  ValueContext m_context;
  std::map<std::string, std::vector<std::string>, std::less<>> m_values;
  std::map<std::string, std::string, std::less<>> m_unknown;  // name -> what sets it at run time
};

}  // namespace sandshim::hooks
