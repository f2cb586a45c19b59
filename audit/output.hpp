#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace sandshim::audit {

// One result row: an object whose keys are the stable field names, in their documented order.
using Row = nlohmann::ordered_json;

enum class Format { table, json, jsonl, csv };

// How a column's value becomes a field: as stored, JSON text parsed, milliseconds as ISO-8601,
// packed arguments as hex when one is not UTF-8, 0/1 as false/true.
enum class Present { plain, json_text, iso_time, hex_if_invalid, boolean };

// A column of the people-facing table: its header and how to render a row's cell.
struct TableColumn {
  std::string header;
  std::string (*render)(const Row& row, const std::string& field);
  std::string field;
  size_t max_width = 40;
};

// The plain text of a cell: strings as they are, numbers, true/false, empty for null, compact
// JSON for arrays and objects.
std::string cell_text(const nlohmann::ordered_json& value);
std::string render_field(const Row& row, const std::string& field);

// Cells of the people-facing table: an ISO time as `2024-05-01 12:00:03`, milliseconds as
// `420ms`, `1.50s` or `2m05s`, an argv array as a shell command line.
std::string render_time(const Row& row, const std::string& field);
std::string render_duration(const Row& row, const std::string& field);
std::string render_command(const Row& row, const std::string& field);

// One table column per field, each showing the field as text.
std::vector<TableColumn> plain_columns(const std::vector<std::string>& fields);

// A JSON document as text; invalid UTF-8 in strings becomes U+FFFD instead of failing, and DEL,
// C1 controls and the line separators are \u escapes (escape_json_controls).
std::string to_json_text(const nlohmann::ordered_json& value, int indent = -1);

// Writes rows as they come (the table buffers, to align its columns).
class RowWriter {
 public:
  virtual ~RowWriter() = default;
  virtual void write(const Row& row) = 0;
  virtual void finish() = 0;
};

// `color` paints the table for a terminal (bold header, outcome columns by severity); the
// other formats never carry escapes.
std::unique_ptr<RowWriter> make_row_writer(Format format, std::ostream& out,
                                           std::vector<std::string> fields,
                                           std::vector<TableColumn> table_columns,
                                           bool color = false);

}  // namespace sandshim::audit
