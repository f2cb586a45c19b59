#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit/encoding.hpp"
#include "audit/output.hpp"

using namespace sandshim::audit;

namespace {

std::string render(Format format, const std::vector<Row>& rows,
                   const std::vector<std::string>& fields) {
  std::ostringstream out;
  auto writer = make_row_writer(format, out, fields, plain_columns(fields));
  for (const auto& row : rows) {
    writer->write(row);
  }
  writer->finish();
  return out.str();
}

const std::vector<std::string> k_fields{"id", "text", "n"};

}  // namespace

TEST_CASE("CSV quotes commas, quotes, line breaks and edge spaces", "[audit][output]") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("") == "");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(csv_field("cr\r") == "\"cr\r\"");
  CHECK(csv_field(" padded") == "\" padded\"");
  std::vector<Row> rows{Row{{"id", "a"}, {"text", "x,y"}, {"n", 1}},
                        Row{{"id", "b"}, {"text", nullptr}, {"n", Row::array({"p", "q"})}}};
  CHECK(render(Format::csv, rows, k_fields) ==
        "id,text,n\na,\"x,y\",1\nb,,\"[\"\"p\"\",\"\"q\"\"]\"\n");
  CHECK(render(Format::csv, {}, k_fields) == "id,text,n\n");
}

TEST_CASE("JSON and JSON lines keep field order and survive invalid UTF-8", "[audit][output]") {
  std::vector<Row> rows{Row{{"id", "a"}, {"text", "bad \xff byte"}, {"n", 1}}};
  CHECK(render(Format::jsonl, rows, k_fields) ==
        "{\"id\":\"a\",\"text\":\"bad \xEF\xBF\xBD byte\",\"n\":1}\n");
  std::string json = render(Format::json, rows, k_fields);
  CHECK(json.front() == '[');
  CHECK(Row::parse(json)[0]["text"] == "bad \xEF\xBF\xBD byte");
  CHECK(render(Format::json, {}, k_fields) == "[]\n");
}

TEST_CASE("the table aligns columns and never prints raw control bytes", "[audit][output]") {
  std::vector<Row> rows{Row{{"id", "a"}, {"text", "esc\x1b[31mred"}, {"n", 10}},
                        Row{{"id", "bbbb"}, {"text", "caf\xc3\xa9"}, {"n", 2}}};
  CHECK(render(Format::table, rows, k_fields) ==
        "id    text            n\n"
        "a     esc\\x1b[31mred  10\n"
        "bbbb  caf\xc3\xa9            2\n");
  CHECK(render(Format::table, {}, k_fields) == "(none)\n");
}

TEST_CASE("long table cells are cut with an ellipsis", "[audit][output]") {
  std::ostringstream out;
  auto writer = make_row_writer(Format::table, out, {"text"}, {{"T", render_field, "text", 5}});
  writer->write(Row{{"text", "abcdefgh"}});
  writer->finish();
  CHECK(out.str() == "T\nabcd\xE2\x80\xA6\n");
}

TEST_CASE("encoding helpers", "[audit][output]") {
  CHECK(is_valid_utf8("caf\xc3\xa9 \xF0\x9F\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  CHECK(to_valid_utf8("a\xffz") == "a\xEF\xBF\xBDz");
  CHECK(printable("line\nnext\t\x07") == "line\\x0anext\\x09\\x07");
  CHECK(printable("line\nnext\t\x07", true) == "line\nnext\t\\x07");
  CHECK(to_hex("\x01\xab") == "01ab");
  CHECK(unpack_args(pack_args({})).empty());
  CHECK(unpack_args(pack_args({""})) == std::vector<std::string>{""});
  CHECK(args_to_json({"a", "\xff"}) == "[\"a\",\"\xEF\xBF\xBD\"]");
}

TEST_CASE("argv JSON is byte for byte what nlohmann::json writes", "[audit][output]") {
  std::vector<std::string> args{"", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "a\"b\\c/d\x7f"};
  for (int c = 0; c < 0x80; ++c) {
    args.push_back(std::string("x") + static_cast<char>(c) + "y");
  }
  nlohmann::json expected = nlohmann::json::array();
  for (const auto& arg : args) {
    expected.push_back(arg);
  }
  CHECK(args_to_json(args) == expected.dump());
  CHECK(args_to_json({}) == "[]");
}
