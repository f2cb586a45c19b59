#pragma once

// The reader behind parse_shell (shell_parser.hpp), shared by the files that hold its parts:
// shell_parser.cpp (characters and positions), shell_grammar.cpp (lists, pipelines, compound
// commands, redirections, here-documents) and shell_words.cpp (quotes and expansions).
// Internal to hooks/.

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "common/strings.hpp"
#include "hooks/shell_parser.hpp"

namespace sandshim::hooks::parsing {

// Deeper nesting than this is refused: no agent writes it, and it would only exhaust the stack.
constexpr int k_max_nesting = 64;

class SyntaxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr std::array<std::string_view, 23> k_operators = {
    ";;&", ";;",  ";&",  ";",  "&&", "&>>", "&>", "&",  "||", "|&", "|", "(",
    ")",   "<<<", "<<-", "<<", "<>", "<&",  "<",  ">>", ">&", ">|", ">"};

constexpr std::array<std::string_view, 12> k_redirection_operators = {
    "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">", "&>>", "&>"};

// Reserved words that end the list before them when they start a command.
constexpr std::array<std::string_view, 8> k_list_terminators = {"then", "else", "elif", "fi",
                                                                "do",   "done", "esac", "}"};

// Builtins whose NAME=(…) arguments are array assignments, as before a command name.
constexpr std::array<std::string_view, 5> k_declaration_builtins = {"declare", "typeset", "local",
                                                                    "export", "readonly"};

inline bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

inline bool is_operator_char(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>';
}

inline bool is_word_end(char c) {
  return c == '\0' || is_blank(c) || c == '\n' || is_operator_char(c);
}

inline bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// A fixed piece of shell syntax, as messages name it: `fi`.
inline std::string literal(std::string_view text) {
  return "`" + std::string(text) + "`";
}

// Merges what an inner expansion revealed into the word that holds it.
inline void absorb(Word& into, const Word& from) {
  into.globs = into.globs || from.globs;
  into.substitutes_commands = into.substitutes_commands || from.substitutes_commands;
  into.arithmetic = into.arithmetic || from.arithmetic;
  into.evaluates_later = into.evaluates_later || from.evaluates_later;
  into.parameters.insert(into.parameters.end(), from.parameters.begin(), from.parameters.end());
}

inline void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | ((code >> 18) & 0x07));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

struct PendingHeredoc {
  size_t command;      // index into the output
  size_t redirection;  // index into that command's redirections
  std::string delimiter;
  bool strip_tabs;
};

class Parser {
 public:
  // `root` is the whole command and `origin` where `text` starts in it, so that an error names
  // its line and column in what the agent wrote.
  Parser(std::string_view text, ShellParse& out, std::string context, int nesting,
         std::string_view root, size_t origin)
      : m_text(text),
        m_root(root),
        m_origin(origin),
        m_out(out),
        m_context(std::move(context)),
        m_nesting(nesting) {
    if (m_nesting > k_max_nesting) {
      throw SyntaxError("commands nested more than " + std::to_string(k_max_nesting) + " deep");
    }
  }

  void parse_script();

  // Reads the text as a here-document body: like the inside of double quotes, where only
  // expansions matter.
  void parse_expanding_text();

 private:
  // ---- characters -------------------------------------------------------------------------

  bool at_end() const;
  char peek(size_t ahead = 0) const;
  bool looking_at(std::string_view s) const;

  [[noreturn]] void fail(const std::string& message) const;

  [[noreturn]] void fail(const std::string& message, size_t at) const;

  // A construct that is not closed where bash would want it closed.
  [[noreturn]] void fail_unclosed(std::string_view opener, std::string_view closer,
                                  size_t start) const;

  // "line 2, column 7" of a position in this text, counted in the whole command.
  std::string position_of(size_t at) const;

  std::string describe_next() const;

  void skip_blanks();

  void skip_blanks_and_comment();

  bool consume_newline();

  void skip_linebreaks();

  std::string_view peek_operator() const;

  // The next word when it is made of plain characters only: reserved words never hold quotes
  // or expansions.
  std::optional<std::string_view> peek_plain_word() const;

  std::optional<std::string_view> peek_plain_word_at(size_t start) const;

  bool consume_reserved(std::string_view word);

  bool at_command_end() const;

  // ---- grammar ----------------------------------------------------------------------------

  // A reserved word that ends the list before it (`then`, `do`, `}`…), when it starts a command.
  bool at_list_end() const;

  void parse_list();

  void parse_and_or();

  void parse_pipeline();

  bool consume_time();

  using Compound = void (Parser::*)(size_t start);

  // The reserved words that open a compound command, each with its reader.
  static std::optional<Compound> compound_reader(std::string_view word);

  void parse_command();

  class Nest {
   public:
    explicit Nest(Parser& parser) : m_parser(parser) {
      if (++m_parser.m_nesting > k_max_nesting) {
        m_parser.fail("commands nested more than " + std::to_string(k_max_nesting) + " deep");
      }
    }
    ~Nest() { --m_parser.m_nesting; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& m_parser;
  };

  void expect_operator(std::string_view op, const char* construct);

  // The operator that closes a construct opened at `start`: `)` for `(`, `$(`, `<(`.
  void expect_closing(std::string_view op, std::string_view opener, size_t start);

  // The reserved word that closes or continues a construct opened at `start`.
  void expect_reserved(std::string_view word, std::string_view opener, size_t start);

  void parse_subshell(size_t start);

  // `((…))` is arithmetic, unless it only reads as two subshells: `((a) || b)`.
  void parse_arithmetic_or_subshells();

  // Like bash, by the parentheses alone: the `)` that closes `((` is followed by another.
  bool arithmetic_closes() const;

  void parse_brace_group(size_t start);

  void parse_if(size_t start);

  void parse_while(size_t start);

  // `for NAME [in WORDS]; do …; done` (also `for NAME do`, the `in` on its own line, a `{ }`
  // body) and `for ((…;…;…))`; `select` reads the same.
  void parse_for(size_t start);

  // bash reads any word here; one that is no variable name fails when the loop starts, before
  // its body runs (the body is analysed all the same).
  bool read_loop_variable(const std::string& keyword);

  // `in WORDS` up to `;` or a newline, after optional newlines; nothing when `do` follows.
  void read_loop_words(bool named);

  void parse_do_group(const std::string& keyword, size_t start);

  void parse_case(size_t start);

  // One `pattern) commands ;;`; false after `esac`.
  bool parse_case_item(size_t start);

  void parse_function_keyword(size_t /*start*/);

  void parse_function_body();

  // `coproc [NAME] compound-command` or `coproc simple-command`: a NAME only before a compound.
  void parse_coproc(size_t /*start*/);

  void parse_conditional(size_t start);

  size_t begin_command();

  void parse_trailing_redirections();

  void parse_simple_command();

  void add_word(size_t index, Word word);

  // `name () compound-command`: the body is what may run; the name is no command.
  void parse_function_definition(size_t index);

  bool redirection_ahead() const;

  // `{fd}>file`: bash opens a free descriptor and stores its number in fd; 0 when absent.
  size_t descriptor_variable_width() const;

  // `2>`, `{fd}>`: the descriptor before a redirection operator, when one is written.
  void read_redirection_descriptor(Redirection& redirection);

  void parse_redirection(size_t index);

  // Here-document bodies start on the line after the command that opened them.
  void read_heredoc_bodies();

  std::string read_heredoc_lines(const PendingHeredoc& doc);

  // ---- words ------------------------------------------------------------------------------

  Word read_word();

  void read_word_part(Word& word, size_t word_start);

  // `*`, `?`, `[…]` or a brace expansion: the word is subject to pathname expansion.
  bool starts_glob(char c, size_t word_start) const;

  bool closes_within_word(char closer) const;

  // `{a,b}` and `{1..3}` expand to several words; `{}` and `{x}` stay as written.
  bool opens_brace_expansion() const;

  void read_escape(Word& word);

  void read_single_quoted(Word& word);

  void read_double_quoted(Word& word);

  void read_escape_in_double_quotes(Word& word);

  void read_dollar(Word& word, bool in_double_quotes);

  void read_dollar_arithmetic(Word& word);

  void read_dollar_name(Word& word);

  void read_ansi_c(Word& word);

  // Decodes one escape of $'…' exactly: $'\x70ython' must be seen as "python".
  void read_ansi_c_escape(Word& word);

  uint32_t read_number(uint32_t base, size_t max_digits);

  // After "((" or "$((": everything up to the matching "))".
  void read_arithmetic_body(Word& word);

  void read_arithmetic_char(Word& word, char c, int& depth);

  // Parentheses count the depth; a backslash escapes the character after it.
  void skip_arithmetic_char(char c, int& depth);

  void read_command_substitution(Word& word);

  void read_process_substitution(Word& word);

  // The commands of a substitution, in their own context.
  void parse_nested_list(const std::string& context);

  void read_parameter_expansion(Word& word);

  void read_parameter_name(Word& word);

  void read_parameter_operand_char(Word& word, char c);

  void read_backquoted(Word& word);

  void read_array_value(Word& word);

  std::string_view m_text;
  std::string_view m_root;
  size_t m_origin;
  size_t m_pos = 0;
  ShellParse& m_out;
  std::vector<PendingHeredoc> m_heredocs;
  std::string m_context;
  int m_nesting;
};

}  // namespace sandshim::hooks::parsing
