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

// Reserved words that only open or close a construct; the commands between them are what runs.
constexpr std::array<std::string_view, 9> k_transparent_keywords = {
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until"};

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

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
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
  Parser(std::string_view text, ShellParse& out, std::string context, int nesting)
      : m_text(text), m_out(out), m_context(std::move(context)), m_nesting(nesting) {
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

  [[noreturn]] void fail(const std::string& message) const {
    size_t line =
        1 +
        static_cast<size_t>(std::count(
            m_text.begin(),
            m_text.begin() + static_cast<std::ptrdiff_t>(std::min(m_pos, m_text.size())), '\n'));
    throw SyntaxError(message + " (line " + std::to_string(line) + ")");
  }

  std::string describe_next() const {
    if (at_end()) {
      return "end of input";
    }
    if (peek() == '\n') {
      return "newline";
    }
    std::string_view op = peek_operator();
    return quoted(op.empty() ? m_text.substr(m_pos, 1) : op);
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
  std::optional<std::string_view> peek_plain_word() const {
    size_t end = m_pos;
    while (end < m_text.size() && !is_word_end(m_text[end])) {
      char c = m_text[end];
      if (c == '\'' || c == '"' || c == '\\' || c == '$' || c == '`') {
        return std::nullopt;
      }
      ++end;
    }
    if (end == m_pos) {
      return std::nullopt;
    }
    return m_text.substr(m_pos, end - m_pos);
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

  bool at_list_end() const {
    if (at_end()) {
      return true;
    }
    std::string_view op = peek_operator();
    if (op == ")" || op == ";;" || op == ";&" || op == ";;&") {
      return true;
    }
    auto word = peek_plain_word();
    return (word == "}" && m_open_braces > 0) || (word == "esac" && m_open_cases > 0);
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

  void parse_command() {
    skip_keywords_that_only_frame();
    if (at_command_end()) {
      return;
    }
    if (looking_at("((")) {
      parse_arithmetic_command();
    } else if (peek_operator() == "(") {
      parse_subshell();
    } else if (auto word = peek_plain_word(); word == "{") {
      parse_brace_group();
    } else if (word == "case") {
      parse_case();
    } else if (word == "for" || word == "select") {
      parse_for(*word);
    } else if (word == "function") {
      parse_function_keyword();
    } else if (word == "[[") {
      parse_conditional();
    } else {
      parse_simple_command();
    }
  }

  // `if`, `then`, `do`, `done`… only frame the commands that run; `coproc` only backgrounds one.
  void skip_keywords_that_only_frame() {
    for (;;) {
      skip_blanks();
      auto word = peek_plain_word();
      if (!word || !(one_of(k_transparent_keywords, *word) || *word == "coproc")) {
        return;
      }
      m_pos += word->size();
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
      fail(std::string("missing ") + std::string(op) + " for " + construct + ", found " +
           describe_next());
    }
    m_pos += op.size();
  }

  void parse_subshell() {
    Nest nest(*this);
    ++m_pos;
    parse_list();
    expect_operator(")", "(");
    parse_trailing_redirections();
  }

  void parse_brace_group() {
    Nest nest(*this);
    ++m_pos;
    ++m_open_braces;
    parse_list();
    skip_linebreaks();
    if (!consume_reserved("}")) {
      fail("missing } for {, found " + describe_next());
    }
    --m_open_braces;
    parse_trailing_redirections();
  }

  void parse_arithmetic_command() {
    m_pos += 2;
    Word scratch;
    read_arithmetic_body(scratch);
    parse_trailing_redirections();
  }

  void parse_for(std::string_view keyword) {
    m_pos += keyword.size();
    skip_blanks();
    if (looking_at("((")) {
      parse_arithmetic_command();
      return;
    }
    Word name = read_word();
    if (name.source.empty()) {
      fail(std::string(keyword) + " without a variable name");
    }
    m_out.loop_variables.push_back(name.value);
    skip_linebreaks();
    if (!consume_reserved("in")) {
      return;
    }
    for (skip_blanks(); !at_command_end(); skip_blanks()) {
      if (read_word().source.empty()) {
        fail("unexpected " + describe_next() + " in " + std::string(keyword) + " list");
      }
    }
  }

  void parse_case() {
    Nest nest(*this);
    m_pos += 4;
    skip_blanks();
    read_word();
    skip_linebreaks();
    if (!consume_reserved("in")) {
      fail("missing `in` after case, found " + describe_next());
    }
    ++m_open_cases;
    while (parse_case_item()) {
    }
    --m_open_cases;
    parse_trailing_redirections();
  }

  // One `pattern) commands ;;`; false after `esac`.
  bool parse_case_item() {
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
        fail("missing case pattern, found " + describe_next());
      }
      skip_blanks();
      if (peek_operator() != "|") {
        break;
      }
      ++m_pos;
    }
    expect_operator(")", "case pattern");
    parse_list();
    skip_linebreaks();
    std::string_view op = peek_operator();
    if (op == ";;" || op == ";&" || op == ";;&") {
      m_pos += op.size();
      return true;
    }
    if (consume_reserved("esac")) {
      return false;
    }
    fail("missing ;; or esac in case, found " + describe_next());
  }

  void parse_function_keyword() {
    m_pos += 8;
    skip_blanks();
    if (read_word().source.empty()) {
      fail("function without a name");
    }
    skip_blanks();
    if (peek_operator() == "(") {
      ++m_pos;
      expect_operator(")", "function name");
    }
    parse_function_body();
  }

  void parse_function_body() {
    Nest nest(*this);
    skip_linebreaks();
    parse_command();
  }

  void parse_conditional() {
    m_pos += 2;
    for (;;) {
      skip_linebreaks();
      if (at_end()) {
        fail("missing ]] for [[");
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
    parse_trailing_redirections();
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
      fail("unexpected (");
    }
    command.words.clear();
    command.redirections.clear();
    ++m_pos;
    expect_operator(")", "function name");
    parse_function_body();
  }

  bool redirection_ahead() const {
    size_t i = m_pos;
    while (i < m_text.size() && is_digit(m_text[i])) {
      ++i;
    }
    if (i < m_text.size() && (m_text[i] == '<' || m_text[i] == '>')) {
      return i + 1 >= m_text.size() || m_text[i + 1] != '(' || i != m_pos;
    }
    return i == m_pos && looking_at("&>");
  }

  void parse_redirection(size_t index) {
    Redirection redirection;
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
        Parser inner(body, m_out, "here-document", m_nesting + 1);
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
      fail("unterminated ' quote");
    }
    word.value.append(m_text.substr(m_pos + 1, end - m_pos - 1));
    word.quoted = true;
    m_pos = end + 1;
  }

  void read_double_quoted(Word& word) {
    ++m_pos;
    word.quoted = true;
    for (;;) {
      if (at_end()) {
        fail("unterminated \" quote");
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
    m_pos += 2;
    word.quoted = true;
    for (;;) {
      if (at_end()) {
        fail("unterminated $' quote");
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
    m_out.arithmetic = true;
    int depth = 0;
    for (;;) {
      if (at_end()) {
        fail("missing )) for ((");
      }
      char c = peek();
      if (c == ')' && depth == 0) {
        if (peek(1) != ')') {
          fail("missing )) for ((");
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
    expect_operator(")", "$(");
    word.substitutes_commands = true;
    word.value.append(m_text.substr(start, m_pos - start));
  }

  void read_process_substitution(Word& word) {
    size_t start = m_pos;
    m_pos += 2;
    parse_nested_list(m_text[start] == '<' ? "<(…)" : ">(…)");
    expect_operator(")", "process substitution");
    word.substitutes_commands = true;
    word.value.append(m_text.substr(start, m_pos - start));
  }

  // The commands of a substitution form a fresh list: braces and cases outside do not close it.
  void parse_nested_list(const std::string& context) {
    Nest nest(*this);
    std::string outer_context = std::exchange(m_context, context);
    int outer_braces = std::exchange(m_open_braces, 0);
    int outer_cases = std::exchange(m_open_cases, 0);
    parse_list();
    m_context = std::move(outer_context);
    m_open_braces = outer_braces;
    m_open_cases = outer_cases;
  }

  void read_parameter_expansion(Word& word) {
    size_t start = m_pos;
    m_pos += 2;
    read_parameter_name(word);
    for (;;) {
      if (at_end()) {
        fail("missing } for ${");
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
        fail("unterminated ` quote");
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
    Parser nested(inner, m_out, "`…`", m_nesting + 1);
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
  size_t m_pos = 0;
  ShellParse& m_out;
  std::vector<PendingHeredoc> m_heredocs;
  std::string m_context;
  int m_nesting;
  int m_open_braces = 0;
  int m_open_cases = 0;
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
    Parser parser(script, result, "", 0);
    parser.parse_script();
  } catch (const SyntaxError& e) {
    result.error = e.what();
  }
  std::erase_if(result.commands, is_empty);
  return result;
}

}  // namespace sandshim::hooks
