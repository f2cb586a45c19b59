// The fleet export reader (`sandshim audit verify|list … --export FILE`): any bytes are either
// refused with a usage error naming the line, or read into records that verify without a crash
// and load into the in-memory database without an SQLite error; every value read re-encodes to
// JSON that reads back as the same value.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "audit/fleet_export.hpp"
#include "audit/fleet_verify.hpp"
#include "common/error.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;
using namespace sandshim::audit;

namespace {

std::vector<ExportRecord> records_or_usage_error(const std::string& text) {
  std::istringstream in(text);
  try {
    return read_export_stream(in, "fuzz");
  } catch (const Fatal& e) {
    fuzz::require(e.code() == exit_code::k_usage, "a bad export line is not a usage error");
    return {};
  }
}

void check_values_round_trip(const ExportRecord& record) {
  for (const auto& value : record.values) {
    auto again = decode_value(Row::parse(to_json_text(encode_value(value))));
    fuzz::require(again && *again == value, "a value does not survive encode and decode");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  auto records = records_or_usage_error(std::string(reinterpret_cast<const char*>(data), size));
  for (const auto& record : records) {
    check_values_round_trip(record);
  }
  ExportVerifyResult result = verify_exports(records, {});
  fuzz::require(result.ok || !result.hosts.empty(), "a failed verify names no host");
  if (!records.empty()) {         // a fresh in-memory schema costs ~30 ms: only when there is data
    (void)load_exports(records);  // an SqliteError here is a row the loader cannot hold: crash
  }
  return 0;
}
