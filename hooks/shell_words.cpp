// Words: quotes, escapes and every expansion ($…, ${…}, $(…), `…`, $((…)), <(…)), with what
// bash would still expand in each.

#include "hooks/shell_parser_impl.hpp"

namespace sandshim::hooks::parsing {

Word Parser::read_word() {
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

void Parser::read_word_part(Word& word, size_t word_start) {
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
    default:
      word.globs = word.globs || starts_glob(c, word_start);
      word.value += c;
      ++m_pos;
  }
}

bool Parser::starts_glob(char c, size_t word_start) const {
  switch (c) {
    case '*':
    case '?':
      return true;
    case '[':
      return closes_within_word(']');
    case '{':
      return (m_pos != word_start || !is_word_end(peek(1))) && opens_brace_expansion();
    default:
      return false;
  }
}

bool Parser::closes_within_word(char closer) const {
  for (size_t i = m_pos + 1; i < m_text.size() && !is_word_end(m_text[i]); ++i) {
    if (m_text[i] == closer) {
      return true;
    }
  }
  return false;
}

bool Parser::opens_brace_expansion() const {
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

void Parser::read_escape(Word& word) {
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

void Parser::read_single_quoted(Word& word) {
  size_t end = m_text.find('\'', m_pos + 1);
  if (end == std::string_view::npos) {
    fail("a ' quote that never closes, opened", m_pos);
  }
  word.value.append(m_text.substr(m_pos + 1, end - m_pos - 1));
  word.quoted = true;
  m_pos = end + 1;
}

void Parser::read_double_quoted(Word& word) {
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

void Parser::read_escape_in_double_quotes(Word& word) {
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

void Parser::read_dollar(Word& word, bool in_double_quotes) {
  char next = peek(1);
  if (!in_double_quotes && next == '\'') {
    read_ansi_c(word);
  } else if (!in_double_quotes && next == '"') {
    ++m_pos;
    read_double_quoted(word);
  } else if (next == '(' && peek(2) == '(') {
    read_dollar_arithmetic(word);
  } else if (next == '(') {
    read_command_substitution(word);
  } else if (next == '{') {
    read_parameter_expansion(word);
  } else if (is_name_start(next)) {
    read_dollar_name(word);
  } else if (next != '\0' &&
             (is_digit(next) || std::string_view("@*#?$!-").find(next) != std::string_view::npos)) {
    word.parameters.emplace_back(1, next);
    word.value.append(m_text.substr(m_pos, 2));
    m_pos += 2;
  } else {
    m_out.arithmetic = m_out.arithmetic || next == '[';
    word.value += '$';
    ++m_pos;
  }
}

void Parser::read_dollar_arithmetic(Word& word) {
  size_t start = m_pos;
  m_pos += 3;
  read_arithmetic_body(word);
  word.arithmetic = true;
  word.value.append(m_text.substr(start, m_pos - start));
}

void Parser::read_dollar_name(Word& word) {
  size_t start = m_pos + 1;
  m_pos = start;
  while (is_name_char(peek())) {
    ++m_pos;
  }
  word.parameters.emplace_back(m_text.substr(start, m_pos - start));
  word.value.append(m_text.substr(start - 1, m_pos - start + 1));
}

void Parser::read_ansi_c(Word& word) {
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

void Parser::read_ansi_c_escape(Word& word) {
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

uint32_t Parser::read_number(uint32_t base, size_t max_digits) {
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

void Parser::read_arithmetic_body(Word& word) {
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

void Parser::read_arithmetic_char(Word& word, char c, int& depth) {
  Word inner;
  switch (c) {
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
    default:
      skip_arithmetic_char(c, depth);
      return;
  }
  absorb(word, inner);
}

void Parser::skip_arithmetic_char(char c, int& depth) {
  if (c == '(') {
    ++depth;
  } else if (c == ')') {
    --depth;
  } else if (c == '\\') {
    m_pos = std::min(m_pos + 2, m_text.size());
    return;
  }
  ++m_pos;
}

void Parser::read_command_substitution(Word& word) {
  size_t start = m_pos;
  m_pos += 2;
  parse_nested_list("$(…)");
  expect_closing(")", "$(", start);
  word.substitutes_commands = true;
  word.value.append(m_text.substr(start, m_pos - start));
}

void Parser::read_process_substitution(Word& word) {
  size_t start = m_pos;
  m_pos += 2;
  parse_nested_list(m_text[start] == '<' ? "<(…)" : ">(…)");
  expect_closing(")", m_text.substr(start, 2), start);
  word.substitutes_commands = true;
  word.value.append(m_text.substr(start, m_pos - start));
}

void Parser::parse_nested_list(const std::string& context) {
  Nest nest(*this);
  std::string outer_context = std::exchange(m_context, context);
  parse_list();
  m_context = std::move(outer_context);
}

void Parser::read_parameter_expansion(Word& word) {
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

void Parser::read_parameter_name(Word& word) {
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

void Parser::read_parameter_operand_char(Word& word, char c) {
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

void Parser::read_backquoted(Word& word) {
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

void Parser::read_array_value(Word& word) {
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

}  // namespace sandshim::hooks::parsing
