#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "audit/chain.hpp"
#include "audit/output.hpp"
#include "audit/sqlite.hpp"

namespace sandshim::audit {

// A fleet export (`sandshim audit export --format fleet`) is JSON lines of three records, each
// naming its host and chain (audit/FIELDS.md, "Fleet export"):
//   begin  where this export starts in the chain (after_seq, after_hash)
//   head   the chain's state as chain_state holds it, with its HMAC, written before the rows up
//          to it, so a tail cut off the file shows against it
//   row    one link: kind, chain_seq, row_hash and every column the link is computed over, typed
enum class ExportFormat { fleet, ocsf };

// One column value as a fleet record carries it, exactly: null, an integer, a string (valid
// UTF-8 text), or an object {"text"|"blob": escape_text of the bytes} / {"real": IEEE bits hex}.
Row encode_value(const SqlValue& value);
// The value back; nullopt for JSON an exporter could not have written.
std::optional<SqlValue> decode_value(const Row& json);

// Where the records go: one line each, no raw control byte in any (JSON escapes them).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void write_line(const std::string& line) = 0;
  virtual void flush() {}
  // False once the reader went away (a closed pipe or socket): a --follow loop ends.
  virtual bool good() const { return true; }
};

std::unique_ptr<RecordSink> stream_sink(std::ostream& out);
// syslog(3) with ident `sandshim-audit`, facility LOG_USER, one record a message (`%s`).
std::unique_ptr<RecordSink> syslog_sink();
// A collector's unix stream socket at `path`: one record a line.
std::unique_ptr<RecordSink> socket_sink(const std::filesystem::path& path);

struct ExportPlan {
  std::string host;  // names this database in every record (default: the host name)
  ExportFormat format = ExportFormat::fleet;
  int64_t after_seq = -1;  // export the links after this position; -1: from the chain's anchor
};

// One pass over `db` in one read transaction: on the first pass (`exported` < 0) the begin
// record, then the head and every link after `exported` up to it. Returns the head's position,
// the `exported` of the next pass (--follow); a pass with nothing new writes nothing.
int64_t export_pass(Database& db, const ExportPlan& plan, int64_t exported, RecordSink& sink);

}  // namespace sandshim::audit
