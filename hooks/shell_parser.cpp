#include "hooks/shell_parser.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "common/strings.hpp"

namespace sandshim::hooks {

namespace {

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

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool is_operator_char(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>';
}

bool is_word_end(char c) {
  return c == '\0' || is_blank(c) || c == '\n' || is_operator_char(c);
}

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// A fixed piece of shell syntax, as messages name it: `fi`.
std::string literal(std::string_view text) {
  return "`" + std::string(text) + "`";
}

template <size_t N>
bool one_of(const std::array<std::string_view, N>& list, std::string_view text) {
  return std::find(list.begin(), list.end(), text) != list.end();
}

// Merges what an inner expansion revealed into the word that holds it.
void absorb(Word& into, const Word& from) {
  into.globs = into.globs || from.globs;
  into.substitutes_commands = into.substitutes_commands || from.substitutes_commands;
  into.arithmetic = into.arithmetic || from.arithmetic;
  into.evaluates_later = into.evaluates_later || from.evaluates_later;
  into.parameters.insert(into.parameters.end(), from.parameters.begin(), from.parameters.end());
}

void append_utf8(std::string& out, uint32_t code) {
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

  void parse_script() {
    parse_list();
    skip_linebreaks();
    if (!at_end()) {
      fail("unexpected " + describe_next());
    }
  }

  // Reads the text as a here-document body: like the inside of double quotes, where only
  // expansions matter.
  void parse_expanding_text() {
    Word scratch;
    while (!at_end()) {
      char c = peek();
      if (c == '\\') {
        m_pos = std::min(m_pos + 2, m_text.size());
      } else if (c == '$') {
        read_dollar(scratch, true);
      } else if (c == '`') {
        read_backquoted(scratch);
      } else {
        ++m_pos;
      }
    }
  }

 private:
  // ---- characters -------------------------------------------------------------------------

  bool at_end() const { return m_pos >= m_text.size(); }
  char peek(size_t ahead = 0) const {
    return m_pos + ahead < m_text.size() ? m_text[m_pos + ahead] : '\0';
  }
  bool looking_at(std::string_view s) const { return m_text.substr(m_pos, s.size()) == s; }

  [[noreturn]] void fail(const std::string& message) const { fail(message, m_pos); }

  [[noreturn]] void fail(const std::string& message, size_t at) const {
    throw SyntaxError(message + " at " + position_of(at));
  }

  // A construct that is not closed where bash would want it closed.
  [[noreturn]] void fail_unclosed(std::string_view opener, std::string_view closer,
                                  size_t start) const {
    throw SyntaxError("the " + literal(opener) + " at " + position_of(start) + " has no " +
                      literal(closer) + " (found " + describe_next() + " at " + position_of(m_pos) +
                      ")");
  }

  // "line 2, column 7" of a position in this text, counted in the whole command.
  std::string position_of(size_t at) const {
    size_t absolute = std::min(m_origin + std::min(at, m_text.size()), m_root.size());
    std::string_view before = m_root.substr(0, absolute);
    size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    size_t line_start = before.rfind('\n');
    size_t column = absolute - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  std::string describe_next() const {
    if (at_end()) {
      return "end of input";
    }
    if (peek() == '\n') {
      return "newline";
    }
    std::string_view op = peek_operator();
    if (!op.empty()) {
      return literal(op);
    }
    return quoted(peek_plain_word().value_or(m_text.substr(m_pos, 1)));
  }

  void skip_blanks() {
    while (!at_end()) {
      if (is_blank(peek())) {
        ++m_pos;
      } else if (peek() == '\\' && peek(1) == '\n') {
        m_pos += 2;
      } else {
        return;
      }
    }
  }

  void skip_blanks_and_comment() {
    skip_blanks();
    if (peek() == '#') {
      while (!at_end() && peek() != '\n') {
        ++m_pos;
      }
    }
  }

  bool consume_newline() {
    if (peek() != '\n') {
      return false;
    }
    ++m_pos;
    read_heredoc_bodies();
    return true;
  }

  void skip_linebreaks() {
    do {
      skip_blanks_and_comment();
    } while (consume_newline());
  }

  std::string_view peek_operator() const {
    for (std::string_view op : k_operators) {
      if (looking_at(op)) {
        return op;
      }
    }
    return {};
  }

  // The next word when it is made of plain characters only: reserved words never hold quotes
  // or expansions.
  std::optional<std::string_view> peek_plain_word() const { return peek_plain_word_at(m_pos); }

  std::optional<std::string_view> peek_plain_word_at(size_t start) const {
    size_t end = start;
    while (end < m_text.size() && !is_word_end(m_text[end])) {
      char c = m_text[end];
      if (c == '\'' || c == '"' || c == '\\' || c == '$' || c == '`') {
        return std::nullopt;
      }
      ++end;
    }
    if (end == start) {
      return std::nullopt;
    }
    return m_text.substr(start, end - start);
  }

  bool consume_reserved(std::string_view word) {
    if (peek_plain_word() != word) {
      return false;
    }
    m_pos += word.size();
    return true;
  }

  bool at_command_end() const {
    if (at_end() || peek() == '\n' || peek() == '#') {
      return true;
    }
    std::string_view op = peek_operator();
    return op == ";" || op == ";;" || op == ";&" || op == ";;&" || op == "&" || op == "&&" ||
           op == "|" || op == "||" || op == "|&" || op == ")";
  }

  // ---- grammar ----------------------------------------------------------------------------

  // A reserved word that ends the list before it (`then`, `do`, `}`…), when it starts a command.
  bool at_list_end() const {
    if (at_end()) {
      return true;
    }
    std::string_view op = peek_operator();
    if (op == ")" || op == ";;" || op == ";&" || op == ";;&") {
      return true;
    }
    auto word = peek_plain_word();
    return word && one_of(k_list_terminators, *word);
  }

  void parse_list() {
    for (;;) {
      skip_linebreaks();
      if (at_list_end()) {
        return;
      }
      parse_and_or();
      skip_blanks_and_comment();
      std::string_view op = peek_operator();
      if (op == ";" || op == "&") {
        ++m_pos;
      } else if (peek() != '\n' && !at_list_end()) {
        fail("unexpected " + describe_next());
      }
    }
  }

  void parse_and_or() {
    parse_pipeline();
    for (;;) {
      skip_blanks_and_comment();
      std::string_view op = peek_operator();
      if (op != "&&" && op != "||") {
        return;
      }
      m_pos += op.size();
      skip_linebreaks();
      parse_pipeline();
    }
  }

  void parse_pipeline() {
    skip_blanks();
    while (consume_reserved("!") || consume_time()) {
      skip_blanks();
    }
    parse_command();
    for (;;) {
      skip_blanks();
      std::string_view op = peek_operator();
      if (op != "|" && op != "|&") {
        return;
      }
      m_pos += op.size();
      skip_linebreaks();
      parse_command();
    }
  }

  bool consume_time() {
    if (!consume_reserved("time")) {
      return false;
    }
    skip_blanks();
    consume_reserved("-p");
    return true;
  }

  using Compound = void (Parser::*)(size_t start);

  // The reserved words that open a compound command, each with its reader.
  static std::optional<Compound> compound_reader(std::string_view word) {
    static constexpr std::array<std::pair<std::string_view, Compound>, 10> k_readers = {{
        {"if", &Parser::parse_if},
        {"while", &Parser::parse_while},
        {"until", &Parser::parse_while},
        {"for", &Parser::parse_for},
        {"select", &Parser::parse_for},
        {"case", &Parser::parse_case},
        {"function", &Parser::parse_function_keyword},
        {"coproc", &Parser::parse_coproc},
        {"{", &Parser::parse_brace_group},
        {"[[", &Parser::parse_conditional},
    }};
    for (const auto& [name, reader] : k_readers) {
      if (name == word) {
        return reader;
      }
    }
    return std::nullopt;
  }

  void parse_command() {
    skip_blanks();
    if (at_command_end()) {
      return;
    }
    size_t start = m_pos;
    if (looking_at("((")) {
      parse_arithmetic_or_subshells();
    } else if (peek_operator() == "(") {
      parse_subshell(start);
    } else if (auto word = peek_plain_word(); word && compound_reader(*word)) {
      Nest nest(*this);
      m_pos += word->size();
      (this->*(*compound_reader(*word)))(start);
      parse_trailing_redirections();
    } else {
      parse_simple_command();
    }
  }

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

  void expect_operator(std::string_view op, const char* construct) {
    skip_linebreaks();
    if (peek_operator() != op) {
      fail("missing " + literal(op) + " for " + construct + ", found " + describe_next());
    }
    m_pos += op.size();
  }

  // The operator that closes a construct opened at `start`: `)` for `(`, `$(`, `<(`.
  void expect_closing(std::string_view op, std::string_view opener, size_t start) {
    skip_linebreaks();
    if (peek_operator() != op) {
      fail_unclosed(opener, op, start);
    }
    m_pos += op.size();
  }

  // The reserved word that closes or continues a construct opened at `start`.
  void expect_reserved(std::string_view word, std::string_view opener, size_t start) {
    skip_linebreaks();
    if (!consume_reserved(word)) {
      fail_unclosed(opener, word, start);
    }
  }

  void parse_subshell(size_t start) {
    Nest nest(*this);
    ++m_pos;
    parse_list();
    expect_closing(")", "(", start);
    parse_trailing_redirections();
  }

  // `((…))` is arithmetic, unless it only reads as two subshells: `((a) || b)`.
  void parse_arithmetic_or_subshells() {
    if (!arithmetic_closes()) {
      parse_subshell(m_pos);
      return;
    }
    m_pos += 2;
    Word scratch;
    read_arithmetic_body(scratch);
    parse_trailing_redirections();
  }

  // Like bash, by the parentheses alone: the `)` that closes `((` is followed by another.
  bool arithmetic_closes() const {
    int depth = 0;
    for (size_t i = m_pos + 2; i < m_text.size(); ++i) {
      if (m_text[i] == '(') {
        ++depth;
      } else if (m_text[i] == ')' && depth-- == 0) {
        return i + 1 < m_text.size() && m_text[i + 1] == ')';
      }
    }
    return false;
  }

  void parse_brace_group(size_t start) {
    parse_list();
    expect_reserved("}", "{", start);
  }

  void parse_if(size_t start) {
    parse_list();
    expect_reserved("then", "if", start);
    parse_list();
    for (;;) {
      skip_linebreaks();
      if (consume_reserved("elif")) {
        parse_list();
        expect_reserved("then", "elif", start);
        parse_list();
      } else if (consume_reserved("else")) {
        parse_list();
        break;
      } else {
        break;
      }
    }
    expect_reserved("fi", "if", start);
  }

  void parse_while(size_t start) {
    std::string keyword(*peek_plain_word_at(start));
    parse_list();
    expect_reserved("do", keyword, start);
    parse_list();
    expect_reserved("done", keyword, start);
  }

  // `for NAME [in WORDS]; do …; done` (also `for NAME do`, the `in` on its own line, a `{ }`
  // body) and `for ((…;…;…))`; `select` reads the same.
  void parse_for(size_t start) {
    std::string keyword(*peek_plain_word_at(start));
    skip_blanks();
    if (looking_at("((")) {
      m_pos += 2;
      Word scratch;
      read_arithmetic_body(scratch);
    } else {
      bool named = read_loop_variable(keyword);
      read_loop_words(named);
    }
    skip_blanks_and_comment();
    if (peek_operator() == ";") {
      ++m_pos;
    }
    parse_do_group(keyword, start);
  }

  // bash reads any word here; one that is no variable name fails when the loop starts, before
  // its body runs (the body is analysed all the same).
  bool read_loop_variable(const std::string& keyword) {
    Word name = read_word();
    if (name.source.empty()) {
      fail(literal(keyword) + " needs a variable name, found " + describe_next());
    }
    if (!is_name(name.source)) {
      return false;
    }
    m_out.loop_variables.push_back(name.value);
    m_out.loops.push_back({name.value, {}, false});
    return true;
  }

  // `in WORDS` up to `;` or a newline, after optional newlines; nothing when `do` follows.
  void read_loop_words(bool named) {
    size_t before = m_pos;
    skip_linebreaks();
    if (!consume_reserved("in")) {
      if (peek_operator() == ";" && m_pos != before) {
        fail("unexpected `;`");
      }
      return;
    }
    std::vector<Word> words;
    for (skip_blanks(); !at_command_end(); skip_blanks()) {
      words.push_back(read_word());
      if (words.back().source.empty()) {
        fail("unexpected " + describe_next() + " in a word list");
      }
    }
    if (named) {
      m_out.loops.back() = {m_out.loops.back().name, std::move(words), true};
    }
    skip_blanks_and_comment();
    if (peek_operator() != ";" && peek() != '\n') {
      fail("unexpected " + describe_next() + " after a word list");
    }
  }

  void parse_do_group(const std::string& keyword, size_t start) {
    skip_linebreaks();
    if (peek_plain_word() == "{") {
      size_t brace = m_pos;
      ++m_pos;
      parse_brace_group(brace);
      return;
    }
    expect_reserved("do", keyword, start);
    parse_list();
    expect_reserved("done", keyword, start);
  }

  void parse_case(size_t start) {
    skip_blanks();
    if (read_word().source.empty()) {
      fail("missing the word after `case`, found " + describe_next());
    }
    expect_reserved("in", "case", start);
    while (parse_case_item(start)) {
    }
  }

  // One `pattern) commands ;;`; false after `esac`.
  bool parse_case_item(size_t start) {
    skip_linebreaks();
    if (consume_reserved("esac")) {
      return false;
    }
    if (peek_operator() == "(") {
      ++m_pos;
    }
    for (;;) {
      skip_blanks();
      if (read_word().source.empty()) {
        fail("missing a case pattern, found " + describe_next());
      }
      skip_blanks();
      if (peek_operator() != "|") {
        break;
      }
      ++m_pos;
    }
    expect_operator(")", "a case pattern");
    parse_list();
    skip_linebreaks();
    std::string_view op = peek_operator();
    if (op == ";;" || op == ";&" || op == ";;&") {
      m_pos += op.size();
      return true;
    }
    expect_reserved("esac", "case", start);
    return false;
  }

  void parse_function_keyword(size_t /*start*/) {
    skip_blanks();
    if (read_word().source.empty()) {
      fail("`function` needs a name, found " + describe_next());
    }
    skip_blanks();
    if (peek_operator() == "(") {
      ++m_pos;
      expect_operator(")", "a function name");
    }
    parse_function_body();
  }

  void parse_function_body() {
    Nest nest(*this);
    skip_linebreaks();
    parse_command();
  }

  // `coproc [NAME] compound-command` or `coproc simple-command`: a NAME only before a compound.
  void parse_coproc(size_t /*start*/) {
    skip_blanks();
    auto name = peek_plain_word();
    if (name && is_name(*name) && !compound_reader(*name)) {
      size_t after = m_pos + name->size();
      while (after < m_text.size() && is_blank(m_text[after])) {
        ++after;
      }
      auto next = peek_plain_word_at(after);
      if ((next && compound_reader(*next)) || (after < m_text.size() && m_text[after] == '(')) {
        m_pos = after;
      }
    }
    parse_command();
  }

  void parse_conditional(size_t start) {
    for (;;) {
      skip_linebreaks();
      if (at_end()) {
        fail_unclosed("[[", "]]", start);
      }
      if (consume_reserved("]]")) {
        break;
      }
      std::string_view op = peek_operator();
      if (!op.empty() && !looking_at("<(") && !looking_at(">(")) {
        m_pos += op.size();  // inside [[ ]] these are operators of the test, not of the shell
      } else {
        size_t before = m_pos;
        m_out.conditional_words.push_back(read_word());
        if (m_pos == before) {  // nothing a word can start with: refuse rather than spin
          fail("unexpected " + describe_next() + " inside [[ ]]");
        }
      }
    }
  }

  size_t begin_command() {
    m_out.commands.push_back(SimpleCommand{{}, {}, {}, m_context});
    return m_out.commands.size() - 1;
  }

  void parse_trailing_redirections() {
    skip_blanks();
    if (!redirection_ahead()) {
      return;
    }
    size_t index = begin_command();
    for (; redirection_ahead(); skip_blanks()) {
      parse_redirection(index);
    }
  }

  void parse_simple_command() {
    size_t index = begin_command();
    for (;;) {
      skip_blanks();
      if (at_command_end()) {
        return;
      }
      if (!looking_at("<(") && !looking_at(">(") && redirection_ahead()) {
        parse_redirection(index);
        continue;
      }
      if (peek_operator() == "(") {
        parse_function_definition(index);
        return;
      }
      Word word = read_word();
      if (word.source.empty()) {
        fail("unexpected " + describe_next());
      }
      add_word(index, std::move(word));
    }
  }

  void add_word(size_t index, Word word) {
    SimpleCommand& command = m_out.commands[index];
    bool assignment = assignment_name(word.source).has_value();
    if (command.words.empty() && assignment) {
      if (word.source.back() == '=' && peek() == '(') {
        read_array_value(word);
      }
      m_out.commands[index].assignments.push_back(std::move(word));
    } else if (assignment && word.source.back() == '=' && peek() == '(' &&
               one_of(k_declaration_builtins, command.words.front().value)) {
      read_array_value(word);  // `declare -A map=([k]=v)`: the array is the argument's value
      m_out.commands[index].words.push_back(std::move(word));
    } else {
      m_out.commands[index].words.push_back(std::move(word));
    }
  }

  // `name () compound-command`: the body is what may run; the name is no command.
  void parse_function_definition(size_t index) {
    SimpleCommand& command = m_out.commands[index];
    if (command.words.size() != 1 || !command.assignments.empty() || command.words[0].quoted ||
        command.words[0].is_dynamic()) {
      fail("unexpected `(` after a command name");
    }
    command.words.clear();
    command.redirections.clear();
    ++m_pos;
    expect_operator(")", "function name");
    parse_function_body();
  }

  bool redirection_ahead() const {
    size_t i = m_pos + descriptor_variable_width();
    while (i < m_text.size() && is_digit(m_text[i])) {
      ++i;
    }
    if (i < m_text.size() && (m_text[i] == '<' || m_text[i] == '>')) {
      return i + 1 >= m_text.size() || m_text[i + 1] != '(' || i != m_pos;
    }
    return i == m_pos && looking_at("&>");
  }

  // `{fd}>file`: bash opens a free descriptor and stores its number in fd; 0 when absent.
  size_t descriptor_variable_width() const {
    if (peek() != '{') {
      return 0;
    }
    size_t close = m_text.find('}', m_pos);
    if (close == std::string_view::npos || close + 1 >= m_text.size() ||
        !is_name(m_text.substr(m_pos + 1, close - m_pos - 1)) ||
        (m_text[close + 1] != '<' && m_text[close + 1] != '>')) {
      return 0;
    }
    return close + 1 - m_pos;
  }

  void parse_redirection(size_t index) {
    Redirection redirection;
    if (size_t width = descriptor_variable_width(); width > 0) {
      m_out.loop_variables.emplace_back(m_text.substr(m_pos + 1, width - 2));
      m_pos += width;
    }
    size_t digits = m_pos;
    while (is_digit(peek())) {
      ++m_pos;
    }
    if (m_pos - digits > 4) {
      fail("file descriptor number too large");
    }
    if (m_pos > digits) {
      redirection.fd = std::stoi(std::string(m_text.substr(digits, m_pos - digits)));
    }
    std::string_view op = peek_operator();
    if (!one_of(k_redirection_operators, op)) {
      fail("unexpected " + describe_next());
    }
    m_pos += op.size();
    skip_blanks();
    if (at_command_end() || peek_operator() == "(") {
      fail("missing target after " + std::string(op));
    }
    redirection.op = std::string(op);
    redirection.target = read_word();
    if (redirection.target.source.empty()) {
      fail("missing target after " + std::string(op));
    }
    if (op == "<<" || op == "<<-") {
      redirection.heredoc_expands = !redirection.target.quoted;
      m_heredocs.push_back({index, m_out.commands[index].redirections.size(),
                            redirection.target.value, op == "<<-"});
    }
    m_out.commands[index].redirections.push_back(std::move(redirection));
  }

  // Here-document bodies start on the line after the command that opened them.
  void read_heredoc_bodies() {
    std::vector<PendingHeredoc> pending = std::move(m_heredocs);
    m_heredocs.clear();
    for (const PendingHeredoc& doc : pending) {
      size_t body_start = m_pos;
      std::string body = read_heredoc_lines(doc);
      // A command shape the parser misreads could leave a here-document without its redirection:
      // refuse it rather than write past the command's redirections.
      if (doc.command >= m_out.commands.size() ||
          doc.redirection >= m_out.commands[doc.command].redirections.size()) {
        fail("a here-document whose command could not be read");
      }
      Redirection& redirection = m_out.commands[doc.command].redirections[doc.redirection];
      redirection.heredoc_body = body;
      if (redirection.heredoc_expands) {
        Parser inner(body, m_out, "here-document", m_nesting + 1, m_root, m_origin + body_start);
        inner.parse_expanding_text();
      }
    }
  }

  std::string read_heredoc_lines(const PendingHeredoc& doc) {
    std::string body;
    while (!at_end()) {
      size_t end = m_text.find('\n', m_pos);
      std::string_view line = m_text.substr(
          m_pos, end == std::string_view::npos ? std::string_view::npos : end - m_pos);
      m_pos = end == std::string_view::npos ? m_text.size() : end + 1;
      if (doc.strip_tabs) {
        line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
      }
      if (line == doc.delimiter) {
        break;
      }
      body.append(line);
      body += '\n';
    }
    return body;
  }

  // ---- words ------------------------------------------------------------------------------

  Word read_word() {
    Word word;
    size_t start = m_pos;
    if (looking_at("<(") || looking_at(">(")) {
      read_process_substitution(word);
    }
    while (!is_word_end(peek())) {
      read_word_part(word, start);
    }
    word.source = std::string(m_text.substr(start, m_pos - start));
    return word;
  }

  void read_word_part(Word& word, size_t word_start) {
    char c = peek();
    switch (c) {
      case '\\':
        read_escape(word);
        return;
      case '\'':
        read_single_quoted(word);
        return;
      case '"':
        read_double_quoted(word);
        return;
      case '$':
        read_dollar(word, false);
        return;
      case '`':
        read_backquoted(word);
        return;
      case '*':
      case '?':
        word.globs = true;
        break;
      case '[':
        word.globs = word.globs || closes_within_word(']');
        break;
      case '{':
        word.globs = word.globs ||
                     ((m_pos != word_start || !is_word_end(peek(1))) && opens_brace_expansion());
        break;
      default:
        break;
    }
    word.value += c;
    ++m_pos;
  }

  bool closes_within_word(char closer) const {
    for (size_t i = m_pos + 1; i < m_text.size() && !is_word_end(m_text[i]); ++i) {
      if (m_text[i] == closer) {
        return true;
      }
    }
    return false;
  }

  // `{a,b}` and `{1..3}` expand to several words; `{}` and `{x}` stay as written.
  bool opens_brace_expansion() const {
    int depth = 0;
    for (size_t i = m_pos; i < m_text.size() && !is_word_end(m_text[i]); ++i) {
      char c = m_text[i];
      if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        return false;
      } else if (depth == 1 &&
                 (c == ',' || (c == '.' && i + 1 < m_text.size() && m_text[i + 1] == '.'))) {
        return true;
      }
    }
    return false;
  }

  void read_escape(Word& word) {
    if (peek(1) == '\n') {
      m_pos += 2;
      return;
    }
    if (m_pos + 1 >= m_text.size()) {
      word.value += '\\';
      ++m_pos;
      return;
    }
    word.value += peek(1);
    word.quoted = true;
    m_pos += 2;
  }

  void read_single_quoted(Word& word) {
    size_t end = m_text.find('\'', m_pos + 1);
    if (end == std::string_view::npos) {
      fail("a ' quote that never closes, opened", m_pos);
    }
    word.value.append(m_text.substr(m_pos + 1, end - m_pos - 1));
    word.quoted = true;
    m_pos = end + 1;
  }

  void read_double_quoted(Word& word) {
    size_t start = m_pos;
    ++m_pos;
    word.quoted = true;
    for (;;) {
      if (at_end()) {
        fail("a \" quote that never closes, opened", start);
      }
      char c = peek();
      if (c == '"') {
        ++m_pos;
        return;
      }
      if (c == '$') {
        read_dollar(word, true);
      } else if (c == '`') {
        read_backquoted(word);
      } else if (c == '\\') {
        read_escape_in_double_quotes(word);
      } else {
        word.value += c;
        ++m_pos;
      }
    }
  }

  void read_escape_in_double_quotes(Word& word) {
    char next = peek(1);
    if (next == '\n') {
      m_pos += 2;
    } else if (next == '$' || next == '`' || next == '"' || next == '\\') {
      word.value += next;
      m_pos += 2;
    } else {
      word.value += '\\';
      ++m_pos;
    }
  }

  void read_dollar(Word& word, bool in_double_quotes) {
    char next = peek(1);
    if (!in_double_quotes && next == '\'') {
      read_ansi_c(word);
    } else if (!in_double_quotes && next == '"') {
      ++m_pos;
      read_double_quoted(word);
    } else if (next == '(' && peek(2) == '(') {
      size_t start = m_pos;
      m_pos += 3;
      read_arithmetic_body(word);
      word.arithmetic = true;
      word.value.append(m_text.substr(start, m_pos - start));
    } else if (next == '(') {
      read_command_substitution(word);
    } else if (next == '{') {
      read_parameter_expansion(word);
    } else if (is_name_start(next)) {
      size_t start = m_pos + 1;
      m_pos = start;
      while (is_name_char(peek())) {
        ++m_pos;
      }
      word.parameters.emplace_back(m_text.substr(start, m_pos - start));
      word.value.append(m_text.substr(start - 1, m_pos - start + 1));
    } else if (next != '\0' && (is_digit(next) ||
                                std::string_view("@*#?$!-").find(next) != std::string_view::npos)) {
      word.parameters.emplace_back(1, next);
      word.value.append(m_text.substr(m_pos, 2));
      m_pos += 2;
    } else {
      m_out.arithmetic = m_out.arithmetic || next == '[';
      word.value += '$';
      ++m_pos;
    }
  }

  void read_ansi_c(Word& word) {
    size_t start = m_pos;
    m_pos += 2;
    word.quoted = true;
    for (;;) {
      if (at_end()) {
        fail("a $' quote that never closes, opened", start);
      }
      char c = peek();
      if (c == '\'') {
        ++m_pos;
        return;
      }
      if (c == '\\') {
        read_ansi_c_escape(word);
      } else {
        word.value += c;
        ++m_pos;
      }
    }
  }

  // Decodes one escape of $'…' exactly: $'\x70ython' must be seen as "python".
  void read_ansi_c_escape(Word& word) {
    char c = peek(1);
    m_pos += 2;
    static constexpr std::string_view k_simple = "abefnrtv\\'\"?E";
    static constexpr std::string_view k_decoded = "\a\b\x1b\f\n\r\t\v\\'\"?\x1b";
    if (size_t at = k_simple.find(c); at != std::string_view::npos) {
      word.value += k_decoded[at];
    } else if (c >= '0' && c <= '7') {
      --m_pos;
      word.value += static_cast<char>(read_number(8, 3));
    } else if (c == 'x' || c == 'u' || c == 'U') {
      size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      size_t before = m_pos;
      uint32_t code = read_number(16, digits);
      if (m_pos == before) {
        word.value += '\\';
        word.value += c;
      } else if (c == 'x') {
        word.value += static_cast<char>(code);
      } else {
        append_utf8(word.value, code);
      }
    } else if (c == 'c' && !at_end()) {
      word.value += static_cast<char>(peek() & 0x1f);
      ++m_pos;
    } else {
      word.value += '\\';
      word.value += c;
    }
  }

  uint32_t read_number(uint32_t base, size_t max_digits) {
    uint32_t value = 0;
    for (size_t n = 0; n < max_digits && !at_end(); ++n) {
      char c = static_cast<char>(std::tolower(static_cast<unsigned char>(peek())));
      uint32_t digit = is_digit(c)              ? static_cast<uint32_t>(c - '0')
                       : (c >= 'a' && c <= 'f') ? static_cast<uint32_t>(c - 'a' + 10)
                                                : base;
      if (digit >= base) {
        break;
      }
      value = value * base + digit;
      ++m_pos;
    }
    return value;
  }

  // After "((" or "$((": everything up to the matching "))".
  void read_arithmetic_body(Word& word) {
    size_t start = m_pos >= 2 ? m_pos - 2 : 0;
    m_out.arithmetic = true;
    int depth = 0;
    for (;;) {
      if (at_end()) {
        fail_unclosed(m_text.substr(start, 2), "))", start);
      }
      char c = peek();
      if (c == ')' && depth == 0) {
        if (peek(1) != ')') {
          fail_unclosed(m_text.substr(start, 2), "))", start);
        }
        m_pos += 2;
        return;
      }
      read_arithmetic_char(word, c, depth);
    }
  }

  void read_arithmetic_char(Word& word, char c, int& depth) {
    Word inner;
    switch (c) {
      case '(':
        ++depth;
        ++m_pos;
        return;
      case ')':
        --depth;
        ++m_pos;
        return;
      case '$':
        read_dollar(inner, true);
        break;
      case '`':
        read_backquoted(inner);
        break;
      case '\'':
        read_single_quoted(inner);
        break;
      case '"':
        read_double_quoted(inner);
        break;
      case '\\':
        m_pos = std::min(m_pos + 2, m_text.size());
        return;
      default:
        ++m_pos;
        return;
    }
    absorb(word, inner);
  }

  void read_command_substitution(Word& word) {
    size_t start = m_pos;
    m_pos += 2;
    parse_nested_list("$(…)");
    expect_closing(")", "$(", start);
    word.substitutes_commands = true;
    word.value.append(m_text.substr(start, m_pos - start));
  }

  void read_process_substitution(Word& word) {
    size_t start = m_pos;
    m_pos += 2;
    parse_nested_list(m_text[start] == '<' ? "<(…)" : ">(…)");
    expect_closing(")", m_text.substr(start, 2), start);
    word.substitutes_commands = true;
    word.value.append(m_text.substr(start, m_pos - start));
  }

  // The commands of a substitution, in their own context.
  void parse_nested_list(const std::string& context) {
    Nest nest(*this);
    std::string outer_context = std::exchange(m_context, context);
    parse_list();
    m_context = std::move(outer_context);
  }

  void read_parameter_expansion(Word& word) {
    size_t start = m_pos;
    m_pos += 2;
    read_parameter_name(word);
    for (;;) {
      if (at_end()) {
        fail_unclosed("${", "}", start);
      }
      char c = peek();
      if (c == '}') {
        ++m_pos;
        break;
      }
      word.evaluates_later = word.evaluates_later || (c == '@' && peek(1) == 'P');
      read_parameter_operand_char(word, c);
    }
    word.value.append(m_text.substr(start, m_pos - start));
  }

  void read_parameter_name(Word& word) {
    bool indirect = peek() == '!';
    if (peek() == '!' || peek() == '#') {
      ++m_pos;
    }
    size_t start = m_pos;
    if (is_name_start(peek())) {
      while (is_name_char(peek())) {
        ++m_pos;
      }
      // ${!name} and ${!name[i]} expand the value of name as a variable reference, subscripts
      // (and so $(…) in them) included; ${!prefix*} and ${!array[@]} only list names.
      word.evaluates_later = word.evaluates_later || (indirect && peek() != '*' && peek() != '@' &&
                                                      !looking_at("[@]") && !looking_at("[*]"));
    } else if (is_digit(peek()) ||
               std::string_view("@*#?$!-").find(peek()) != std::string_view::npos) {
      ++m_pos;
    }
    if (m_pos > start) {
      word.parameters.emplace_back(m_text.substr(start, m_pos - start));
    }
  }

  void read_parameter_operand_char(Word& word, char c) {
    Word inner;
    if (c == '\\') {
      m_pos = std::min(m_pos + 2, m_text.size());
      return;
    }
    if (c == '\'') {
      read_single_quoted(inner);
    } else if (c == '"') {
      read_double_quoted(inner);
    } else if (c == '$') {
      read_dollar(inner, true);
    } else if (c == '`') {
      read_backquoted(inner);
    } else {
      ++m_pos;
      return;
    }
    absorb(word, inner);
  }

  void read_backquoted(Word& word) {
    size_t start = m_pos;
    ++m_pos;
    std::string inner;
    for (;;) {
      if (at_end()) {
        fail("a ` quote that never closes, opened", start);
      }
      char c = peek();
      if (c == '`') {
        ++m_pos;
        break;
      }
      if (c == '\\' && (peek(1) == '`' || peek(1) == '\\' || peek(1) == '$')) {
        inner += peek(1);
        m_pos += 2;
        continue;
      }
      inner += c;
      ++m_pos;
    }
    Parser nested(inner, m_out, "`…`", m_nesting + 1, m_root, m_origin + start + 1);
    nested.parse_script();
    word.substitutes_commands = true;
    word.value.append(m_text.substr(start, m_pos - start));
  }

  void read_array_value(Word& word) {
    size_t start = m_pos;
    ++m_pos;
    for (;;) {
      skip_linebreaks();
      if (at_end()) {
        fail("missing ) for array");
      }
      if (peek() == ')') {
        ++m_pos;
        break;
      }
      Word element = read_word();
      if (element.source.empty()) {
        fail("unexpected " + describe_next() + " in array");
      }
      absorb(word, element);
    }
    word.source.append(m_text.substr(start, m_pos - start));
    word.value.append(m_text.substr(start, m_pos - start));
  }

  std::string_view m_text;
  std::string_view m_root;
  size_t m_origin;
  size_t m_pos = 0;
  ShellParse& m_out;
  std::vector<PendingHeredoc> m_heredocs;
  std::string m_context;
  int m_nesting;
};

bool is_empty(const SimpleCommand& command) {
  return command.words.empty() && command.assignments.empty() && command.redirections.empty();
}

}  // namespace

std::optional<std::string> assignment_name(std::string_view source) {
  if (source.empty() || !is_name_start(source[0])) {
    return std::nullopt;
  }
  size_t end = 1;
  while (end < source.size() && is_name_char(source[end])) {
    ++end;
  }
  size_t i = end;
  if (i < source.size() && source[i] == '[') {
    i = source.find(']', i);
    if (i == std::string_view::npos) {
      return std::nullopt;
    }
    ++i;
  }
  if (i < source.size() && source[i] == '+') {
    ++i;
  }
  if (i >= source.size() || source[i] != '=') {
    return std::nullopt;
  }
  return std::string(source.substr(0, end));
}

ShellParse parse_shell(std::string_view script) {
  ShellParse result;
  try {
    Parser parser(script, result, "", 0, script, 0);
    parser.parse_script();
  } catch (const SyntaxError& e) {
    result.error = e.what();
  }
  std::erase_if(result.commands, is_empty);
  return result;
}

}  // namespace sandshim::hooks
