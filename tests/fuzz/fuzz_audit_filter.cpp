// The filters of `sandshim audit list|decisions|stats`: any option values either make a WHERE
// clause SQLite prepares and binds, or are refused with a usage error. The queries run against
// an empty in-memory database with the real schema.

#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "audit/output.hpp"
#include "audit/query.hpp"
#include "audit/schema.hpp"
#include "audit/sqlite.hpp"
#include "common/error.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;
using namespace sandshim::audit;

namespace {

constexpr int64_t k_now_ms = 1'750'000'000'000;

Database& schema_database() {
  static Database db(":memory:", OpenMode::read_write, std::chrono::milliseconds(0));
  static const bool migrated = [] {
    migrate(db);
    return true;
  }();
  (void)migrated;
  return db;
}

// Option name -> value, as boost hands them to build_filter: options drawn from the table.
std::map<std::string, std::string> option_values(FuzzedDataProvider& input) {
  auto specs = filter_specs();
  std::map<std::string, std::string> values;
  while (input.remaining_bytes() > 0) {
    const auto& spec = specs[input.ConsumeIntegralInRange<size_t>(0, specs.size() - 1)];
    values[std::string(spec.option)] = input.ConsumeRandomLengthString(256);
  }
  return values;
}

std::optional<Filter> filter_or_usage_error(Subject subject,
                                            const std::map<std::string, std::string>& values) {
  try {
    return build_filter(subject, values, k_now_ms);
  } catch (const Fatal& e) {
    fuzz::require(e.code() == exit_code::k_usage, "a bad filter value is not a usage error");
    return std::nullopt;
  }
}

void run_queries(Subject subject, const Filter& filter) {
  Database& db = schema_database();
  std::ostringstream out;
  if (subject == Subject::runs) {
    auto writer = make_row_writer(Format::jsonl, out, run_fields(), run_table_columns());
    (void)query_runs(db, filter, Order::newest_first, 10, *writer);
    (void)compute_stats(db, filter);
    (void)compute_daily_stats(db, filter);
  } else {
    auto writer = make_row_writer(Format::jsonl, out, decision_fields(), decision_table_columns());
    (void)query_decisions(db, filter, 10, *writer);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  FuzzedDataProvider input(data, size);
  Subject subject = input.ConsumeBool() ? Subject::runs : Subject::decisions;
  auto values = option_values(input);
  if (auto filter = filter_or_usage_error(subject, values)) {
    run_queries(subject, *filter);  // a SqliteError here is a broken filter: let it crash
  }
  return 0;
}
