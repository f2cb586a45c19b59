#pragma once

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandshim::hooks {

// One word of a shell command after quote removal, and what bash would still expand in it.
struct Word {
  std::string value;                    // quotes removed; expansions kept as written ("$HOME/bin")
  std::string source;                   // the word exactly as written
  bool quoted = false;                  // a character was quoted or escaped: never a reserved word
  bool globs = false;                   // unquoted *, ?, [..] or {a,b}: expansion may change it
  bool substitutes_commands = false;    // $(…), `…`, <(…): text produced by running a command
  bool arithmetic = false;              // $((…))
  bool evaluates_later = false;         // ${x@P}, ${!x}: a value bash expands again, as code
  std::vector<std::string> parameters;  // names of $NAME / ${NAME…} expansions

  // True when bash only knows the final text once the command runs.
  bool is_dynamic() const {
    return globs || substitutes_commands || arithmetic || !parameters.empty();
  }
};

struct Redirection {
  std::string op;  // "<", ">", ">>", "<<", "<<-", "<<<", "<&", ">&", "&>", "&>>", "<>", ">|"
  int fd = -1;     // the explicit descriptor ("2>"), -1 when absent
  Word target;     // file, descriptor, here-document delimiter or here-string
  std::string heredoc_body;
  bool heredoc_expands = false;  // unquoted delimiter: $(…) in the body runs
};

// A command bash would execute (or a builtin it would run), with where it was found.
struct SimpleCommand {
  std::vector<Word> assignments;  // NAME=value words before the command name
  std::vector<Word> words;        // the command name and its arguments
  std::vector<Redirection> redirections;
  std::string
      context;  // "" on the command line itself, else "$(…)", "`…`", "<(…)", "here-document"
};

// The words a `for`/`select` loop gives its variable, when it names them (`for f in a b`).
struct LoopWords {
  std::string name;
  std::vector<Word> words;
  bool listed = false;  // false: `for f; do` takes the positional parameters
};

struct ShellParse {
  std::vector<SimpleCommand> commands;      // every simple command, in source order
  std::vector<std::string> loop_variables;  // names `for`/`select` and `{fd}>` redirections assign
  std::vector<LoopWords> loops;             // every `for NAME`/`select NAME`, with its words
  bool arithmetic = false;              // ((…)), $((…)), $[…], for ((…)): values evaluated
  std::vector<Word> conditional_words;  // the words of every [[ … ]]
  std::optional<std::string> error;     // why the text is not a shell command bash would run
};

// Parses a command line the way bash reads it: quotes and escapes, `;` `&&` `||` `|` `&`,
// subshells, groups, if/while/for/case, functions, `$(…)`, backquotes, process substitution,
// arithmetic, redirections and here-documents. Every command substitution is parsed too, so
// nothing bash would execute hides inside a word. Fails rather than guess, with a reason that
// names the construct and its line and column ("the `if` at line 1, column 4 has no `fi` …").
ShellParse parse_shell(std::string_view script);

// The variable a word assigns ("PATH" for `PATH=/x`, `PATH+=:/x`, `a[1]=x`), when it is an
// assignment as bash reads one: an unquoted name, then `=`.
std::optional<std::string> assignment_name(std::string_view source);

// A shell name (a variable's): a letter or `_`, then letters, digits and `_`.
inline bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
inline bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}
inline bool is_name(std::string_view text) {
  return !text.empty() && is_name_start(text[0]) &&
         std::all_of(text.begin(), text.end(), is_name_char);
}

}  // namespace sandshim::hooks
