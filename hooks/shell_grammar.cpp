// The grammar: lists, pipelines, compound commands (POSIX and bash), simple commands,
// redirections and here-documents.

#include "hooks/shell_parser_impl.hpp"

namespace sandshim::hooks::parsing {

bool Parser::at_list_end() const {
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

void Parser::parse_list() {
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

void Parser::parse_and_or() {
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

void Parser::parse_pipeline() {
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

bool Parser::consume_time() {
  if (!consume_reserved("time")) {
    return false;
  }
  skip_blanks();
  consume_reserved("-p");
  return true;
}

std::optional<Parser::Compound> Parser::compound_reader(std::string_view word) {
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

void Parser::parse_command() {
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

void Parser::expect_operator(std::string_view op, const char* construct) {
  skip_linebreaks();
  if (peek_operator() != op) {
    fail("missing " + literal(op) + " for " + construct + ", found " + describe_next());
  }
  m_pos += op.size();
}

void Parser::expect_closing(std::string_view op, std::string_view opener, size_t start) {
  skip_linebreaks();
  if (peek_operator() != op) {
    fail_unclosed(opener, op, start);
  }
  m_pos += op.size();
}

void Parser::expect_reserved(std::string_view word, std::string_view opener, size_t start) {
  skip_linebreaks();
  if (!consume_reserved(word)) {
    fail_unclosed(opener, word, start);
  }
}

void Parser::parse_subshell(size_t start) {
  Nest nest(*this);
  ++m_pos;
  parse_list();
  expect_closing(")", "(", start);
  parse_trailing_redirections();
}

void Parser::parse_arithmetic_or_subshells() {
  if (!arithmetic_closes()) {
    parse_subshell(m_pos);
    return;
  }
  m_pos += 2;
  Word scratch;
  read_arithmetic_body(scratch);
  parse_trailing_redirections();
}

bool Parser::arithmetic_closes() const {
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

void Parser::parse_brace_group(size_t start) {
  parse_list();
  expect_reserved("}", "{", start);
}

void Parser::parse_if(size_t start) {
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

void Parser::parse_while(size_t start) {
  std::string keyword(*peek_plain_word_at(start));
  parse_list();
  expect_reserved("do", keyword, start);
  parse_list();
  expect_reserved("done", keyword, start);
}

void Parser::parse_for(size_t start) {
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

bool Parser::read_loop_variable(const std::string& keyword) {
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

void Parser::read_loop_words(bool named) {
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

void Parser::parse_do_group(const std::string& keyword, size_t start) {
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

void Parser::parse_case(size_t start) {
  skip_blanks();
  if (read_word().source.empty()) {
    fail("missing the word after `case`, found " + describe_next());
  }
  expect_reserved("in", "case", start);
  while (parse_case_item(start)) {
  }
}

bool Parser::parse_case_item(size_t start) {
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

void Parser::parse_function_keyword(size_t /*start*/) {
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

void Parser::parse_function_body() {
  Nest nest(*this);
  skip_linebreaks();
  parse_command();
}

void Parser::parse_coproc(size_t /*start*/) {
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

void Parser::parse_conditional(size_t start) {
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

size_t Parser::begin_command() {
  m_out.commands.push_back(SimpleCommand{{}, {}, {}, m_context});
  return m_out.commands.size() - 1;
}

void Parser::parse_trailing_redirections() {
  skip_blanks();
  if (!redirection_ahead()) {
    return;
  }
  size_t index = begin_command();
  for (; redirection_ahead(); skip_blanks()) {
    parse_redirection(index);
  }
}

void Parser::parse_simple_command() {
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

void Parser::add_word(size_t index, Word word) {
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

void Parser::parse_function_definition(size_t index) {
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

bool Parser::redirection_ahead() const {
  size_t i = m_pos + descriptor_variable_width();
  while (i < m_text.size() && is_digit(m_text[i])) {
    ++i;
  }
  if (i < m_text.size() && (m_text[i] == '<' || m_text[i] == '>')) {
    return i + 1 >= m_text.size() || m_text[i + 1] != '(' || i != m_pos;
  }
  return i == m_pos && looking_at("&>");
}

size_t Parser::descriptor_variable_width() const {
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

void Parser::read_redirection_descriptor(Redirection& redirection) {
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
}

void Parser::parse_redirection(size_t index) {
  Redirection redirection;
  read_redirection_descriptor(redirection);
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
    m_heredocs.push_back(
        {index, m_out.commands[index].redirections.size(), redirection.target.value, op == "<<-"});
  }
  m_out.commands[index].redirections.push_back(std::move(redirection));
}

void Parser::read_heredoc_bodies() {
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

std::string Parser::read_heredoc_lines(const PendingHeredoc& doc) {
  std::string body;
  while (!at_end()) {
    size_t end = m_text.find('\n', m_pos);
    std::string_view line =
        m_text.substr(m_pos, end == std::string_view::npos ? std::string_view::npos : end - m_pos);
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

}  // namespace sandshim::hooks::parsing
