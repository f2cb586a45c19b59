#include "install/json_text.hpp"

#include <algorithm>

namespace sandshim::install {

using Json = nlohmann::ordered_json;
using Node = JsonText::Node;

namespace {

constexpr int k_max_depth = 256;

std::string position(std::string_view text, size_t offset) {
  size_t line =
      1 + static_cast<size_t>(std::count(
              text.begin(),
              text.begin() + static_cast<std::ptrdiff_t>(std::min(offset, text.size())), '\n'));
  size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Records where each value, member and element lies. Values are checked for strictness by
// nlohmann's parser afterwards; this scanner only needs to find their boundaries.
class SpanScanner {
 public:
  explicit SpanScanner(std::string_view text) : m_text(text) {}

  Node scan_document() {
    skip_space();
    Node root = scan_value(0);
    skip_space();
    if (m_pos != m_text.size()) {
      fail("text after the JSON value");
    }
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonTextError(what + " at " + position(m_text, m_pos));
  }

  void skip_space() {
    while (m_pos < m_text.size() &&
           std::string_view(" \t\r\n").find(m_text[m_pos]) != std::string_view::npos) {
      ++m_pos;
    }
  }

  void expect(char c) {
    skip_space();
    if (m_pos >= m_text.size() || m_text[m_pos] != c) {
      fail(std::string("expected '") + c + "'");
    }
    ++m_pos;
  }

  Node scan_value(int depth) {
    if (depth > k_max_depth) {
      fail("nesting too deep");
    }
    skip_space();
    if (m_pos >= m_text.size()) {
      fail("unexpected end of text");
    }
    char c = m_text[m_pos];
    if (c == '{') {
      return scan_container(Node::Kind::object, '}', depth);
    }
    if (c == '[') {
      return scan_container(Node::Kind::array, ']', depth);
    }
    Node node;
    node.begin = node.start = m_pos;
    c == '"' ? skip_string() : skip_scalar();
    node.end = m_pos;
    return node;
  }

  Node scan_container(Node::Kind kind, char closer, int depth) {
    Node node;
    node.kind = kind;
    node.begin = node.start = m_pos++;
    skip_space();
    if (m_pos < m_text.size() && m_text[m_pos] == closer) {
      node.end = ++m_pos;
      return node;
    }
    for (;;) {
      node.children.push_back(kind == Node::Kind::object ? scan_member(depth)
                                                         : scan_value(depth + 1));
      skip_space();
      if (m_pos < m_text.size() && m_text[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      expect(closer);
      node.end = m_pos;
      return node;
    }
  }

  Node scan_member(int depth) {
    skip_space();
    size_t start = m_pos;
    if (m_pos >= m_text.size() || m_text[m_pos] != '"') {
      fail("expected a key");
    }
    skip_string();
    std::string key = Json::parse(m_text.substr(start, m_pos - start)).get<std::string>();
    expect(':');
    Node value = scan_value(depth + 1);
    value.start = start;
    value.key = std::move(key);
    return value;
  }

  void skip_string() {
    ++m_pos;
    while (m_pos < m_text.size() && m_text[m_pos] != '"') {
      m_pos += m_text[m_pos] == '\\' ? 2 : 1;
    }
    if (m_pos >= m_text.size()) {
      fail("unterminated string");
    }
    ++m_pos;
  }

  void skip_scalar() {
    size_t begin = m_pos;
    while (m_pos < m_text.size() &&
           std::string_view(",]} \t\r\n").find(m_text[m_pos]) == std::string_view::npos) {
      ++m_pos;
    }
    if (m_pos == begin) {
      fail("expected a value");
    }
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

// The offset just past the JSON string token that starts at `pos`.
size_t string_token_end(const std::string& text, size_t pos) {
  ++pos;
  while (pos < text.size() && text[pos] != '"') {
    pos += text[pos] == '\\' ? 2 : 1;
  }
  return pos + 1;
}

void reject_duplicate_keys(const Node& node, const std::string& text) {
  for (size_t i = 0; i < node.children.size(); ++i) {
    const Node& child = node.children[i];
    if (node.kind == Node::Kind::object) {
      for (size_t j = 0; j < i; ++j) {
        if (node.children[j].key == child.key) {
          throw JsonTextError("duplicate key \"" + child.key + "\" at " +
                              position(text, child.start));
        }
      }
    }
    reject_duplicate_keys(child, text);
  }
}

}  // namespace

JsonText::JsonText(std::string text) : m_text(std::move(text)) {
  reparse();
}

void JsonText::reparse() {
  try {
    Json strict = Json::parse(m_text);
    static_cast<void>(strict);
  } catch (const Json::parse_error& e) {
    throw JsonTextError("not valid JSON at " + position(m_text, e.byte == 0 ? 0 : e.byte - 1));
  }
  m_root = SpanScanner(m_text).scan_document();
  reject_duplicate_keys(m_root, m_text);
}

Json JsonText::value() const {
  return Json::parse(m_text);
}

const Node& JsonText::node(const JsonPath& path) const {
  const Node* current = &m_root;
  for (const auto& step : path) {
    const Node* next = nullptr;
    if (const auto* key = std::get_if<std::string>(&step);
        key && current->kind == Node::Kind::object) {
      auto found = std::find_if(current->children.begin(), current->children.end(),
                                [&](const Node& child) { return child.key == *key; });
      next = found == current->children.end() ? nullptr : &*found;
    } else if (const auto* index = std::get_if<size_t>(&step);
               index && current->kind == Node::Kind::array && *index < current->children.size()) {
      next = &current->children[*index];
    }
    if (next == nullptr) {
      throw std::out_of_range("no JSON value at that path");
    }
    current = next;
  }
  return *current;
}

bool JsonText::contains(const JsonPath& path) const {
  try {
    node(path);
    return true;
  } catch (const std::out_of_range&) {
    return false;
  }
}

size_t JsonText::size(const JsonPath& path) const {
  return node(path).children.size();
}

std::string JsonText::line_indent(size_t pos) const {
  size_t line_start = m_text.rfind('\n', pos == 0 ? 0 : pos - 1);
  line_start = line_start == std::string::npos ? 0 : line_start + 1;
  size_t end = m_text.find_first_not_of(" \t", line_start);
  return m_text.substr(line_start, std::min(end, pos) - line_start);
}

// The document's indentation step, from its first indented line; two spaces when it has none.
std::string JsonText::indent_unit() const {
  for (const Node& child : m_root.children) {
    std::string indent = line_indent(child.start);
    if (!indent.empty() && m_text.find('\n', m_root.begin) < child.start) {
      return indent;
    }
  }
  return "  ";
}

std::string JsonText::child_indent(const Node& container) const {
  if (!container.children.empty()) {
    return line_indent(container.children.front().start);
  }
  return line_indent(container.begin) + indent_unit();
}

// The value as text for a position indented by `indent`, in the document's indentation style.
std::string JsonText::render(const Json& value, const std::string& indent) const {
  if (!multiline()) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  std::string unit = indent_unit();
  bool tabs = unit.find('\t') != std::string::npos;
  std::string text = value.dump(tabs ? 1 : static_cast<int>(unit.size()), tabs ? '\t' : ' ', false,
                                Json::error_handler_t::replace);
  std::string result;
  for (char c : text) {
    result += c;
    if (c == '\n') {
      result += indent;
    }
  }
  return result;
}

void JsonText::insert_child(const Node& container, const std::string& child_text) {
  bool spread = multiline();
  if (container.children.empty()) {
    std::string base = line_indent(container.begin);
    std::string inner =
        spread ? "\n" + child_indent(container) + child_text + "\n" + base : child_text;
    m_text.replace(container.begin + 1, container.end - container.begin - 2, inner);
  } else {
    bool own_lines = m_text.find('\n', container.begin) < container.children.front().start;
    std::string separator = own_lines ? ",\n" + child_indent(container) : (spread ? ", " : ",");
    m_text.insert(container.children.back().end, separator + child_text);
  }
  reparse();
}

void JsonText::add_member(const JsonPath& object, const std::string& key, const Json& value) {
  const Node& container = node(object);
  JsonPath member = object;
  member.emplace_back(key);
  if (container.kind != Node::Kind::object || contains(member)) {
    throw std::logic_error("cannot add member \"" + key + "\"");
  }
  std::string separator = multiline() ? ": " : ":";
  if (!container.children.empty()) {
    const Node& first = container.children.front();
    size_t key_end = string_token_end(m_text, first.start);
    separator = m_text.substr(key_end, first.begin - key_end);  // the user's own " : " style
  }
  std::string indent = child_indent(container);
  insert_child(container, Json(key).dump() + separator + render(value, indent));
}

void JsonText::append_element(const JsonPath& array, const Json& value) {
  const Node& container = node(array);
  if (container.kind != Node::Kind::array) {
    throw std::logic_error("not an array");
  }
  insert_child(container, render(value, child_indent(container)));
}

void JsonText::replace(const JsonPath& path, const Json& value) {
  const Node& target = node(path);
  std::string text = render(value, line_indent(target.start));
  m_text.replace(target.begin, target.end - target.begin, text);
  reparse();
}

void JsonText::remove(const JsonPath& path) {
  if (path.empty()) {
    throw std::logic_error("cannot remove the document");
  }
  const Node& parent = node(JsonPath(path.begin(), path.end() - 1));
  const Node& target = node(path);
  auto index = static_cast<size_t>(&target - parent.children.data());
  if (parent.children.size() == 1) {
    m_text.erase(parent.begin + 1, parent.end - parent.begin - 2);
  } else if (index == 0) {
    m_text.erase(target.start, parent.children[1].start - target.start);
  } else {
    size_t from = parent.children[index - 1].end;
    m_text.erase(from, target.end - from);
  }
  reparse();
}

}  // namespace sandshim::install
