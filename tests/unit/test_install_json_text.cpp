#include <catch2/catch.hpp>

#include "install/json_text.hpp"

using sandshim::install::JsonPath;
using sandshim::install::JsonText;
using sandshim::install::JsonTextError;
using Json = nlohmann::ordered_json;

namespace {

JsonPath path(std::initializer_list<std::variant<std::string, size_t>> steps) {
  return steps;
}

}  // namespace

TEST_CASE("json text adds members in the document's own style", "[install][json_text]") {
  JsonText spaces("{\n    \"a\" : 1\n}\n");
  spaces.add_member({}, "b", Json{{"x", Json::array({1, 2})}});
  CHECK(spaces.text() ==
        "{\n    \"a\" : 1,\n    \"b\" : {\n        \"x\": [\n            1,\n            2\n       "
        " ]\n    }\n}\n");

  JsonText tabs("{\n\t\"a\": {\n\t\t\"k\": true\n\t}\n}");
  tabs.add_member(path({std::string("a")}), "m", "v");
  CHECK(tabs.text() == "{\n\t\"a\": {\n\t\t\"k\": true,\n\t\t\"m\": \"v\"\n\t}\n}");

  JsonText minified("{\"a\":1}");
  minified.add_member({}, "b", Json{{"c", 2}});
  CHECK(minified.text() == "{\"a\":1,\"b\":{\"c\":2}}");
}

TEST_CASE("json text fills empty containers readably", "[install][json_text]") {
  JsonText empty("{}");
  empty.add_member({}, "hooks", Json{{"E", Json::array()}});
  CHECK(empty.text() == "{\n  \"hooks\": {\n    \"E\": []\n  }\n}");

  JsonText nested("{\n  \"list\": [],\n  \"z\": 0\n}\n");
  nested.append_element(path({std::string("list")}), "x");
  CHECK(nested.text() == "{\n  \"list\": [\n    \"x\"\n  ],\n  \"z\": 0\n}\n");
}

TEST_CASE("json text removal is the exact inverse of an addition", "[install][json_text]") {
  const std::string original =
      "{\n  \"a\": [ 1,2 ],\n  \"b\": {\"q\": \"\\u00e9\", \"n\": 1.50e3}\n}\n";
  JsonText doc(original);
  doc.append_element(path({std::string("a")}), Json{{"k", 1}});
  doc.add_member(path({std::string("b")}), "r", false);
  doc.add_member({}, "c", Json::array({true}));
  CHECK(doc.value()["b"]["n"] == 1500.0);
  doc.remove(path({std::string("c")}));
  doc.remove(path({std::string("b"), std::string("r")}));
  doc.remove(path({std::string("a"), size_t{2}}));
  CHECK(doc.text() == original);
}

TEST_CASE("json text removes first, middle and only children cleanly", "[install][json_text]") {
  JsonText doc("[\n  1,\n  2,\n  3\n]");
  doc.remove(path({size_t{0}}));
  CHECK(doc.text() == "[\n  2,\n  3\n]");
  doc.remove(path({size_t{1}}));
  CHECK(doc.text() == "[\n  2\n]");
  doc.remove(path({size_t{0}}));
  CHECK(doc.text() == "[]");
}

TEST_CASE("json text replaces one value and keeps the rest", "[install][json_text]") {
  JsonText doc("{ \"cmd\" : \"old\" ,\"keep\":[1] }");
  doc.replace(path({std::string("cmd")}), "new");
  CHECK(doc.text() == "{ \"cmd\" : \"new\" ,\"keep\":[1] }");
}

TEST_CASE("json text handles keys with colons and escapes", "[install][json_text]") {
  JsonText doc("{\n  \"a:b\\\"\" : 1\n}");
  doc.add_member({}, "c", 2);
  CHECK(doc.text() == "{\n  \"a:b\\\"\" : 1,\n  \"c\" : 2\n}");
  CHECK(doc.contains(path({std::string("a:b\"")})));
}

TEST_CASE("json text refuses what it must not rewrite", "[install][json_text]") {
  for (const char* bad : {"{\"a\": 1,}", "{// comment\n}", "{\"a\": 1, \"a\": 2}", "", "{\"a\": }",
                          "[1 2]", "{\"a\": 1} trailing", "{\"a\": tru}"}) {
    INFO(bad);
    CHECK_THROWS_AS(JsonText(bad), JsonTextError);
  }
  try {
    JsonText("{\n  \"a\": 1,\n  \"a\": 2\n}");
    FAIL("accepted a duplicate key");
  } catch (const JsonTextError& e) {
    CHECK(std::string(e.what()) == "duplicate key \"a\" at line 3, column 3");
  }
}

TEST_CASE("json text reports where invalid JSON breaks", "[install][json_text]") {
  try {
    JsonText("{\n  \"model\": \"opus\",\n}\n");
    FAIL("accepted a trailing comma");
  } catch (const JsonTextError& e) {
    CHECK(std::string(e.what()).find("line 3") != std::string::npos);
  }
}
