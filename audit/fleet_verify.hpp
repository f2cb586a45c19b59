#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/chain.hpp"
#include "audit/output.hpp"
#include "audit/sqlite.hpp"

namespace sandshim::audit {

// A record of a fleet export as read back, with where it was read (for messages).
struct ExportRecord {
  std::string record;  // begin, head or row
  std::string host;
  std::string chain_id;
  std::string source;  // file:line
  size_t order = 0;    // position in the merged input: the order the records came in
  Row json;
  // row records, checked when read: their table and values in link_column_names order
  const ChainTable* table = nullptr;
  int64_t seq = 0;
  std::vector<SqlValue> values;
};

// Every record of the files, in order (several hosts' exports concatenated or interleaved).
// A line that is not a record an exporter writes is a usage error naming file and line (exit 2);
// OCSF lines are refused (they carry no chain).
std::vector<ExportRecord> read_exports(const std::vector<std::filesystem::path>& files);
std::vector<ExportRecord> read_export_stream(std::istream& in, const std::string& name);

// The keys a fleet's collector holds: each host's audit.key_file, by the host name its
// exports carry (`--key HOST=PATH`, or a directory of HOST.key files).
using HostKeys = std::map<std::string, ChainKey>;
HostKeys read_host_keys(const std::vector<std::string>& host_paths,
                        const std::filesystem::path& key_dir);

// What verify found wrong in one host's records.
struct ExportFault {
  std::string fault;  // gap, reordered, changed, relinked, duplicate, truncated, head_edited,
                      // rechained, no_key, wrong_key, chain_changed, unkeyed, unknown_host
  int64_t seq = 0;
  std::string source;
  std::string problem;
};

struct HostReport {
  std::string host;
  std::string chain_id;
  int64_t rows = 0;
  int64_t first_seq = 0;
  int64_t last_seq = 0;
  int64_t head_seq = 0;  // the highest head the exports carried
  bool keyed = false;
  std::vector<ExportFault> faults;
};

struct ExportVerifyResult {
  bool ok = true;
  std::vector<HostReport> hosts;
};

// Verifies each host's records on their own: positions without a gap, in order, each link's
// hash (HMAC under the host's key where keyed) and its prev_hash, every head's HMAC and hash,
// and that no head promises rows the export lacks. Reports every fault, not just the first.
ExportVerifyResult verify_exports(const std::vector<ExportRecord>& records, const HostKeys& keys);

// An in-memory audit database (the same schema, chain indexes dropped because positions repeat
// across hosts) holding every row record, for list, show, stats and sql over a merged export;
// its table `exported` (host, chain_id, kind, chain_seq, id) names each row's exporting host.
std::unique_ptr<Database> load_exports(const std::vector<ExportRecord>& records);

}  // namespace sandshim::audit
