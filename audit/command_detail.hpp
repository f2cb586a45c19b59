#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "audit/commands.hpp"
#include "audit/output.hpp"
#include "audit/query.hpp"
#include "audit/sqlite.hpp"
#include "audit/store.hpp"

// What the files of `sandshim audit` share: commands.cpp parses and dispatches, commands_query.cpp
// runs the queries, commands_chain.cpp verify, prune and the fleet export. Not for other callers.
namespace sandshim::audit::command_detail {

namespace po = boost::program_options;

// What one subcommand gets: its parsed options, the database and where to write.
struct Invocation {
  po::variables_map options;
  std::filesystem::path db_path;
  std::ostream& out;
  bool tty;
  int64_t now_ms;
  bool color;  // a terminal that allows colour (NO_COLOR, TERM=dumb)
  const AuditContext& context;
  bool is_configured_db;  // db_path is context.configured_db: its key and anchor apply
};

// Formats: the first flag given wins; none means a table on a terminal, else `fallback`.
Format chosen_format(const Invocation& invocation, std::optional<Format> fallback = {});
// The filter options given, by option name.
std::map<std::string, std::string> filter_values(const Invocation& invocation);
// The options' filter, narrowed to the viewer's own rows when the broker asks for one caller.
Filter filter_for(const Invocation& invocation, Subject subject);
[[noreturn]] void administrators_only(std::string_view what);
int64_t limit_of(const Invocation& invocation);
Store open_store(const Invocation& invocation, bool writable);
// The --export files, and whether any were given.
std::vector<std::filesystem::path> export_files(const Invocation& invocation);
bool from_export(const Invocation& invocation);
// One JSON document: indented for --json, on one line for --jsonl.
void write_document(const Invocation& invocation, const Row& document, Format format);

// What a query reads: the audit database, or merged exports loaded into an in-memory one with
// the same schema (--export), so every query runs unchanged on a fleet's records.
class Source {
 public:
  explicit Source(const Invocation& invocation);
  Database& database() { return m_memory ? *m_memory : m_store->database(); }

 private:
  std::optional<Store> m_store;
  std::unique_ptr<Database> m_memory;
};

// The subcommands (commands_query.cpp).
int run_list(const Invocation& invocation);
int run_show(const Invocation& invocation);
int run_stats(const Invocation& invocation);
int run_export(const Invocation& invocation);
int run_decisions(const Invocation& invocation);
int run_connections(const Invocation& invocation);
int run_sql(const Invocation& invocation);
// The subcommands over the whole chain (commands_chain.cpp).
int run_fleet_export(const Invocation& invocation);
int run_verify(const Invocation& invocation);
int run_prune(const Invocation& invocation);

}  // namespace sandshim::audit::command_detail
