#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit/encoding.hpp"
#include "audit/output.hpp"
#include "common/escape.hpp"
#include "test_audit_support.hpp"
#include "test_escape_support.hpp"

using namespace sandshim::audit;
using sandshim::audit::testing::lines_of;

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

TEST_CASE("CSV quotes commas, quotes and edge spaces, and escapes line breaks", "[audit][output]") {
  CHECK(sandshim::csv_escaped("plain") == "plain");
  CHECK(sandshim::csv_escaped("") == "");
  CHECK(sandshim::csv_escaped("a,b") == "\"a,b\"");
  CHECK(sandshim::csv_escaped("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(sandshim::csv_escaped("two\nlines") == "two\\x0alines");
  CHECK(sandshim::csv_escaped("cr\r,\x1b") == "\"cr\\x0d,\\x1b\"");
  CHECK(sandshim::csv_escaped(" padded") == "\" padded\"");
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
  CHECK(printable("line\nnext\t\x07", true) == "line\nnext\\x09\\x07");
  CHECK(printable("c1 \xc2\x9b, bad \xff, \\") == "c1 \\xc2\\x9b, bad \\xff, \\\\");
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

namespace {

std::vector<Row> hostile_rows() {
  std::vector<Row> rows;
  int id = 0;
  for (const std::string& text : sandshim::testing::hostile_strings(300, 60)) {
    rows.push_back(Row{{"id", std::to_string(id++)}, {"text", text}, {"n", Row::array({text})}});
  }
  return rows;
}

}  // namespace

TEST_CASE("every format: one clean line a record, whatever the fields hold", "[audit][output]") {
  auto rows = hostile_rows();
  for (Format format : {Format::csv, Format::jsonl, Format::table}) {
    auto lines = lines_of(render(format, rows, k_fields));
    REQUIRE(lines.size() == rows.size() + (format == Format::jsonl ? 0 : 1));
    for (const auto& line : lines) {
      INFO(line);
      REQUIRE_FALSE(sandshim::testing::has_raw_control(line));
    }
  }
  auto csv = lines_of(render(Format::csv, rows, k_fields));
  for (size_t i = 0; i < rows.size(); ++i) {
    auto fields = sandshim::testing::read_csv_line(csv[i + 1]);
    REQUIRE(fields.size() == 3);
    REQUIRE(sandshim::unescape_text(fields[1]) == rows[i]["text"].get<std::string>());
  }
  auto jsonl = lines_of(render(Format::jsonl, rows, k_fields));
  for (size_t i = 0; i < rows.size(); ++i) {
    auto text = rows[i]["text"].get<std::string>();
    auto read = Row::parse(jsonl[i])["text"];
    REQUIRE((is_valid_utf8(text) ? read == text : read.is_string()));  // else U+FFFD somewhere
  }
  for (const auto& line : lines_of(render(Format::json, rows, k_fields))) {
    REQUIRE_FALSE(sandshim::testing::has_raw_control(line));
  }
}
