#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace sandshim::install {

// The text is not JSON sandshim can edit: invalid, commented, or with a duplicate key.
class JsonTextError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a value sits: object keys and array indexes from the root.
using JsonPath = std::vector<std::variant<std::string, size_t>>;

// A JSON document edited in place. Each edit splices new text next to its siblings, in their
// indentation style, and leaves every other byte as it was: the user's formatting, key order,
// number spelling and escapes survive. Removing what an edit added restores the text exactly
// (except that an object or array sandshim filled from empty comes back as `{}` / `[]`).
class JsonText {
 public:
  // Throws JsonTextError with line and column when the text is not strict JSON (comments
  // included) or repeats a key.
  explicit JsonText(std::string text);

  const std::string& text() const { return m_text; }
  nlohmann::ordered_json value() const;

  bool contains(const JsonPath& path) const;
  // The number of members or elements of the container at `path`.
  size_t size(const JsonPath& path) const;

  void add_member(const JsonPath& object, const std::string& key,
                  const nlohmann::ordered_json& value);
  void append_element(const JsonPath& array, const nlohmann::ordered_json& value);
  void replace(const JsonPath& path, const nlohmann::ordered_json& value);
  // Removes a member or an element with the separator that joined it to its siblings.
  void remove(const JsonPath& path);

  struct Node {
    enum class Kind { object, array, scalar } kind = Kind::scalar;
    size_t begin = 0;  // the value's bytes: [begin, end)
    size_t end = 0;
    size_t start = 0;  // where the member (its key) or element starts
    std::string key;
    std::vector<Node> children;
  };

 private:
  const Node& node(const JsonPath& path) const;
  void insert_child(const Node& container, const std::string& child_text);
  std::string render(const nlohmann::ordered_json& value, const std::string& indent) const;
  std::string child_indent(const Node& container) const;
  std::string line_indent(size_t pos) const;
  std::string indent_unit() const;
  // Spread over lines like the document, or pretty when it is an empty {} or [] to imitate.
  bool multiline() const {
    return m_text.find('\n') != std::string::npos || m_root.children.empty();
  }
  void reparse();

  std::string m_text;
  Node m_root;
};

}  // namespace sandshim::install
