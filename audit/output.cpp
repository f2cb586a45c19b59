#include "audit/output.hpp"

#include <fmt/format.h>

#include <optional>

#include "audit/encoding.hpp"
#include "common/escape.hpp"
#include "common/strings.hpp"
#include "common/terminal.hpp"

namespace sandshim::audit {

std::string to_json_text(const nlohmann::ordered_json& value, int indent) {
  return escape_json_controls(
      value.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

std::string cell_text(const nlohmann::ordered_json& value) {
  if (value.is_null()) {
    return "";
  }
  if (value.is_string()) {
    return value.get<std::string>();
  }
  return to_json_text(value);
}

std::string render_field(const Row& row, const std::string& field) {
  auto found = row.find(field);
  return found == row.end() ? "" : cell_text(*found);
}

std::string render_time(const Row& row, const std::string& field) {
  auto text = render_field(row, field);
  return text.size() >= 19 ? text.substr(0, 10) + " " + text.substr(11, 8) : text;
}

std::string render_duration(const Row& row, const std::string& field) {
  const auto& value = row[field];
  if (!value.is_number_integer()) {
    return "";
  }
  auto ms = value.get<int64_t>();
  if (ms < 1000) {
    return fmt::format("{}ms", ms);
  }
  if (ms < 60000) {
    return fmt::format("{:.2f}s", static_cast<double>(ms) / 1000.0);
  }
  return fmt::format("{}m{:02}s", ms / 60000, ms / 1000 % 60);
}

std::string render_command(const Row& row, const std::string& field) {
  const auto& argv = row[field];
  if (!argv.is_array()) {
    return render_field(row, field);
  }
  std::vector<std::string> words;
  for (const auto& word : argv) {
    words.push_back(word.is_string() ? word.get<std::string>() : to_json_text(word));
  }
  return shell_join(words);
}

std::vector<TableColumn> plain_columns(const std::vector<std::string>& fields) {
  std::vector<TableColumn> columns;
  for (const auto& field : fields) {
    columns.push_back(TableColumn{field, render_field, field, 40});
  }
  return columns;
}

namespace {

class JsonWriter : public RowWriter {
 public:
  explicit JsonWriter(std::ostream& out) : m_out(out) {}
  void write(const Row& row) override {
    m_out << (m_first ? "[\n" : ",\n") << to_json_text(row, 2);
    m_first = false;
  }
  void finish() override { m_out << (m_first ? "[]\n" : "\n]\n"); }

 private:
  std::ostream& m_out;
  bool m_first = true;
};

class JsonLinesWriter : public RowWriter {
 public:
  explicit JsonLinesWriter(std::ostream& out) : m_out(out) {}
  void write(const Row& row) override { m_out << to_json_text(row) << '\n'; }
  void finish() override { m_out.flush(); }

 private:
  std::ostream& m_out;
};

class CsvWriter : public RowWriter {
 public:
  CsvWriter(std::ostream& out, std::vector<std::string> fields)
      : m_out(out), m_fields(std::move(fields)) {
    write_line(m_fields);
  }
  void write(const Row& row) override {
    std::vector<std::string> cells;
    for (const auto& field : m_fields) {
      cells.push_back(render_field(row, field));
    }
    write_line(cells);
  }
  void finish() override { m_out.flush(); }

 private:
  void write_line(const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      m_out << (i == 0 ? "" : ",") << csv_escaped(cells[i]);
    }
    m_out << '\n';
  }

  std::ostream& m_out;
  std::vector<std::string> m_fields;
};

// Cut to `width` characters, marking the cut with an ellipsis.
std::string fit(const std::string& text, size_t width) {
  if (display_width(text) <= width) {
    return text;
  }
  std::string cut;
  size_t shown = 0;
  for (char c : text) {
    bool starts_character = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_character && ++shown > width - 1) {
      break;
    }
    cut += c;
  }
  return cut + "\xE2\x80\xA6";
}

// The colour of an outcome cell: green when it went through, red when it failed or was refused.
std::optional<terminal::Style> outcome_style(const std::string& field, const std::string& value) {
  if (field != "status" && field != "decision") {
    return std::nullopt;
  }
  if (value == "ok" || value == "allow") {
    return terminal::Style::green;
  }
  if (value == "running" || value == "abandoned" || value == "ask" || value == "rewrite") {
    return terminal::Style::yellow;
  }
  return value.empty() ? std::nullopt : std::optional(terminal::Style::red);
}

class TableWriter : public RowWriter {
 public:
  TableWriter(std::ostream& out, std::vector<TableColumn> columns, bool color)
      : m_out(out), m_columns(std::move(columns)), m_color(color) {
    std::vector<std::string> headers;
    for (const auto& column : m_columns) {
      headers.push_back(column.header);
    }
    m_cells.push_back(std::move(headers));
  }

  void write(const Row& row) override {
    std::vector<std::string> cells;
    for (const auto& column : m_columns) {
      cells.push_back(fit(printable(column.render(row, column.field)), column.max_width));
    }
    m_cells.push_back(std::move(cells));
  }

  void finish() override {
    if (m_cells.size() == 1) {
      m_out << "(none)\n";
      return;
    }
    auto widths = column_widths();
    for (const auto& line : m_cells) {
      write_line(line, widths);
    }
  }

 private:
  [[nodiscard]] std::vector<size_t> column_widths() const {
    std::vector<size_t> widths(m_columns.size(), 0);
    for (const auto& line : m_cells) {
      for (size_t i = 0; i < line.size(); ++i) {
        widths[i] = std::max(widths[i], display_width(line[i]));
      }
    }
    return widths;
  }

  // Pads by the plain text's width, then paints, so escapes never shift a column.
  [[nodiscard]] std::string painted(const std::string& cell, size_t column, bool header) const {
    if (header) {
      return terminal::paint(cell, terminal::Style::bold, m_color);
    }
    auto style = outcome_style(m_columns[column].field, cell);
    return style ? terminal::paint(cell, *style, m_color) : cell;
  }

  void write_line(const std::vector<std::string>& line, const std::vector<size_t>& widths) {
    std::string text;
    bool header = &line == &m_cells.front();
    for (size_t i = 0; i < line.size(); ++i) {
      bool last = i + 1 == line.size();
      text += painted(line[i], i, header);
      if (!last) {
        text += std::string(widths[i] - display_width(line[i]) + 2, ' ');
      }
    }
    m_out << text << '\n';
  }

  std::ostream& m_out;
  std::vector<TableColumn> m_columns;
  std::vector<std::vector<std::string>> m_cells;
  bool m_color;
};

}  // namespace

std::unique_ptr<RowWriter> make_row_writer(Format format, std::ostream& out,
                                           std::vector<std::string> fields,
                                           std::vector<TableColumn> table_columns, bool color) {
  switch (format) {
    case Format::json:
      return std::make_unique<JsonWriter>(out);
    case Format::jsonl:
      return std::make_unique<JsonLinesWriter>(out);
    case Format::csv:
      return std::make_unique<CsvWriter>(out, std::move(fields));
    case Format::table:
      break;
  }
  return std::make_unique<TableWriter>(out, std::move(table_columns), color);
}

}  // namespace sandshim::audit
