// Characters, positions and errors: what the grammar and the word reader look at.

#include "hooks/shell_parser.hpp"

#include "hooks/shell_parser_impl.hpp"

namespace sandshim::hooks::parsing {

void Parser::parse_script() {
  parse_list();
  skip_linebreaks();
  if (!at_end()) {
    fail("unexpected " + describe_next());
  }
}

void Parser::parse_expanding_text() {
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

bool Parser::at_end() const {
  return m_pos >= m_text.size();
}

char Parser::peek(size_t ahead) const {
  return m_pos + ahead < m_text.size() ? m_text[m_pos + ahead] : '\0';
}

bool Parser::looking_at(std::string_view s) const {
  return m_text.substr(m_pos, s.size()) == s;
}

[[noreturn]] void Parser::fail(const std::string& message) const {
  fail(message, m_pos);
}

[[noreturn]] void Parser::fail(const std::string& message, size_t at) const {
  throw SyntaxError(message + " at " + position_of(at));
}

[[noreturn]] void Parser::fail_unclosed(std::string_view opener, std::string_view closer,
                                        size_t start) const {
  throw SyntaxError("the " + literal(opener) + " at " + position_of(start) + " has no " +
                    literal(closer) + " (found " + describe_next() + " at " + position_of(m_pos) +
                    ")");
}

std::string Parser::position_of(size_t at) const {
  size_t absolute = std::min(m_origin + std::min(at, m_text.size()), m_root.size());
  std::string_view before = m_root.substr(0, absolute);
  size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  size_t line_start = before.rfind('\n');
  size_t column = absolute - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string Parser::describe_next() const {
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

void Parser::skip_blanks() {
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

void Parser::skip_blanks_and_comment() {
  skip_blanks();
  if (peek() == '#') {
    while (!at_end() && peek() != '\n') {
      ++m_pos;
    }
  }
}

bool Parser::consume_newline() {
  if (peek() != '\n') {
    return false;
  }
  ++m_pos;
  read_heredoc_bodies();
  return true;
}

void Parser::skip_linebreaks() {
  do {
    skip_blanks_and_comment();
  } while (consume_newline());
}

std::string_view Parser::peek_operator() const {
  for (std::string_view op : k_operators) {
    if (looking_at(op)) {
      return op;
    }
  }
  return {};
}

std::optional<std::string_view> Parser::peek_plain_word() const {
  return peek_plain_word_at(m_pos);
}

std::optional<std::string_view> Parser::peek_plain_word_at(size_t start) const {
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

bool Parser::consume_reserved(std::string_view word) {
  if (peek_plain_word() != word) {
    return false;
  }
  m_pos += word.size();
  return true;
}

bool Parser::at_command_end() const {
  if (at_end() || peek() == '\n' || peek() == '#') {
    return true;
  }
  std::string_view op = peek_operator();
  return op == ";" || op == ";;" || op == ";&" || op == ";;&" || op == "&" || op == "&&" ||
         op == "|" || op == "||" || op == "|&" || op == ")";
}

}  // namespace sandshim::hooks::parsing

namespace sandshim::hooks {

using namespace parsing;  // Parser's helpers

bool is_empty(const SimpleCommand& command) {
  return command.words.empty() && command.assignments.empty() && command.redirections.empty();
}

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
