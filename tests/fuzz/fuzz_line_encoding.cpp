// The one encoder of caller bytes (common/escape.hpp) and the writers built on it: any bytes give
// one line without a control, which reads back to the same bytes (below the cap) or the same
// JSON value; an anchor line whose chain id is those bytes is still one line.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "../unit/test_escape_support.hpp"
#include "audit/anchor.hpp"
#include "audit/output.hpp"
#include "common/escape.hpp"
#include "common/strings.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;

namespace {

using sandshim::testing::has_raw_control;

void check_escape(std::string_view text) {
  std::string escaped = escape_text(text, k_no_escape_cap);
  fuzz::require(!has_raw_control(escaped), "escape_text left a control");
  fuzz::require(unescape_text(escaped) == std::string(text), "escape_text does not read back");
  fuzz::require(!has_raw_control(escape_text(text, 16)), "a cut escape_text left a control");
  fuzz::require(!has_raw_control(quoted(text)), "quoted left a control");
  fuzz::require(!has_raw_control(csv_escaped(text)), "csv_escaped left a control");
}

void check_json(std::string_view text) {
  nlohmann::ordered_json value = {{"text", std::string(text)}};
  std::string json = audit::to_json_text(value);
  fuzz::require(!has_raw_control(json), "JSON output left a control");
  auto read = nlohmann::ordered_json::parse(json, nullptr, false);
  fuzz::require(read.is_object() && read["text"].is_string(), "JSON output does not read back");
}

void check_anchor_line(std::string_view text) {
  audit::AnchorEntry entry{audit::AnchorEntry::Kind::head, std::string(text), 1,
                           std::string(64, 'a'), 1};
  std::string line = audit::anchor_line(entry, nullptr);
  fuzz::require(line.find('\n') == line.size() - 1, "an anchor line is not one line");
  fuzz::require(!has_raw_control(line.substr(0, line.size() - 1)), "an anchor line has a control");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_escape(text);
  check_json(text);
  check_anchor_line(text);
  return 0;
}
