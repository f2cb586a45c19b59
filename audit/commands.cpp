#include "audit/commands.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "audit/chain.hpp"
#include "audit/encoding.hpp"
#include "audit/environment.hpp"
#include "audit/fleet_export.hpp"
#include "audit/fleet_verify.hpp"
#include "audit/liveness.hpp"
#include "audit/query.hpp"
#include "audit/store.hpp"
#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "common/escape.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/terminal.hpp"

namespace sandshim::audit {

namespace po = boost::program_options;

namespace {

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

// Option groups a subcommand takes.
constexpr unsigned k_run_filters = 1U << 0;
constexpr unsigned k_decision_filters = 1U << 1;
constexpr unsigned k_formats = 1U << 2;
constexpr unsigned k_json = 1U << 3;
constexpr unsigned k_limit = 1U << 4;
constexpr unsigned k_stats = 1U << 5;
constexpr unsigned k_prune = 1U << 6;
constexpr unsigned k_integrity = 1U << 7;
constexpr unsigned k_connection_filters = 1U << 8;
constexpr unsigned k_from_export = 1U << 9;
constexpr unsigned k_fleet_export = 1U << 10;

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  std::string_view description;
  std::string_view examples;
  std::string_view positional;  // the one operand it takes, if any
  unsigned option_groups;
  int64_t default_limit;
  int (*run)(const Invocation&);
};

// Formats: the first flag given wins; none means a table on a terminal, else `fallback`.
constexpr std::pair<std::string_view, Format> k_format_flags[] = {{"table", Format::table},
                                                                  {"json", Format::json},
                                                                  {"jsonl", Format::jsonl},
                                                                  {"csv", Format::csv}};

Format chosen_format(const Invocation& invocation, std::optional<Format> fallback = {}) {
  for (const auto& [flag, format] : k_format_flags) {
    if (invocation.options.count(std::string(flag)) != 0) {
      return format;
    }
  }
  return fallback ? *fallback : invocation.tty ? Format::table : Format::jsonl;
}

std::map<std::string, std::string> filter_values(const Invocation& invocation) {
  std::map<std::string, std::string> values;
  for (const auto& spec : filter_specs()) {
    std::string option(spec.option);
    if (invocation.options.count(option) != 0) {
      values[option] = invocation.options[option].as<std::string>();
    }
  }
  return values;
}

// The options' filter, narrowed to the viewer's own rows when the broker asks for one caller.
Filter filter_for(const Invocation& invocation, Subject subject) {
  Filter filter = build_filter(subject, filter_values(invocation), invocation.now_ms);
  if (auto uid = invocation.context.viewer.only_uid) {
    filter.where = "(" + filter.where + ") AND uid = ?";
    filter.params.emplace_back(static_cast<int64_t>(*uid));
    filter.columns.insert("uid");
  }
  return filter;
}

[[noreturn]] void administrators_only(std::string_view what) {
  throw Fatal("audit " + std::string(what) +
                  " is an administrator's command (root or the broker's user " + k_broker_user +
                  "); fix: ask an administrator to run `sudo sandshim audit " + std::string(what) +
                  " ...`",
              exit_code::k_sandbox_error);
}

int64_t limit_of(const Invocation& invocation) {
  return invocation.options["limit"].as<int64_t>();
}

Store open_store(const Invocation& invocation, bool writable) {
  return Store::open(
      StoreOptions{invocation.db_path, std::chrono::milliseconds(5000), !writable, false});
}

std::vector<std::filesystem::path> export_files(const Invocation& invocation) {
  std::vector<std::filesystem::path> files;
  for (const auto& file : invocation.options["export"].as<std::vector<std::string>>()) {
    files.emplace_back(file);
  }
  return files;
}

bool from_export(const Invocation& invocation) {
  return invocation.options.count("export") != 0;
}

// What a query reads: the audit database, or merged exports loaded into an in-memory one with
// the same schema (--export), so every query below runs unchanged on a fleet's records.
class Source {
 public:
  explicit Source(const Invocation& invocation) {
    if (from_export(invocation)) {
      m_memory = load_exports(read_exports(export_files(invocation)));
    } else {
      m_store.emplace(open_store(invocation, false));
    }
  }
  Database& database() { return m_memory ? *m_memory : m_store->database(); }

 private:
  std::optional<Store> m_store;
  std::unique_ptr<Database> m_memory;
};

int list_runs_as(const Invocation& invocation, Order order, std::optional<Format> fallback) {
  Source source(invocation);
  Filter filter = filter_for(invocation, Subject::runs);
  auto writer = make_row_writer(chosen_format(invocation, fallback), invocation.out, run_fields(),
                                run_table_columns(), invocation.color);
  query_runs(source.database(), filter, order, limit_of(invocation), *writer);
  return 0;
}

int run_list(const Invocation& invocation) {
  return list_runs_as(invocation, Order::newest_first, std::nullopt);
}

std::unique_ptr<RecordSink> export_sink(const Invocation& invocation, std::ofstream& file) {
  if (invocation.options.count("syslog") + invocation.options.count("socket") +
          invocation.options.count("output") >
      1) {
    throw Fatal("give one of --output, --syslog and --socket", exit_code::k_usage);
  }
  if (invocation.options.count("syslog") != 0) {
    return syslog_sink();
  }
  if (invocation.options.count("socket") != 0) {
    return socket_sink(invocation.options["socket"].as<std::string>());
  }
  if (invocation.options.count("output") != 0) {
    std::string path = invocation.options["output"].as<std::string>();
    file.open(path, std::ios::app | std::ios::binary);
    if (!file) {
      throw Fatal("cannot append to " + quoted(path), exit_code::k_usage);
    }
    return stream_sink(file);
  }
  return stream_sink(invocation.out);
}

ExportPlan export_plan(const Invocation& invocation) {
  std::string format = invocation.options["format"].as<std::string>();
  if (format != "fleet" && format != "ocsf") {
    throw Fatal("bad value " + quoted(format) + " for --format: expected fleet or ocsf",
                exit_code::k_usage);
  }
  ExportPlan plan;
  plan.format = format == "ocsf" ? ExportFormat::ocsf : ExportFormat::fleet;
  plan.host = invocation.options.count("hostname") != 0
                  ? invocation.options["hostname"].as<std::string>()
                  : current_host();
  if (invocation.options.count("after") != 0) {
    plan.after_seq = invocation.options["after"].as<int64_t>();
    if (plan.after_seq < 0) {
      throw Fatal("--after takes a chain position, 0 or more", exit_code::k_usage);
    }
  }
  return plan;
}

// --format fleet|ocsf: the whole chain with its heads, once or (--follow) as it grows.
int run_fleet_export(const Invocation& invocation) {
  if (invocation.context.viewer.only_uid) {
    administrators_only("export --format");  // the chain is every user's rows
  }
  ExportPlan plan = export_plan(invocation);
  Store store = open_store(invocation, false);
  std::ofstream file;
  auto sink = export_sink(invocation, file);
  int64_t exported = export_pass(store.database(), plan, -1, *sink);
  while (invocation.options.count("follow") != 0 && sink->good()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    exported = export_pass(store.database(), plan, exported, *sink);
  }
  return sink->good() ? 0 : exit_code::k_sandbox_error;
}

int run_export(const Invocation& invocation) {
  if (invocation.options.count("format") != 0) {
    if (!filter_values(invocation).empty() || invocation.options["limit"].as<int64_t>() != 0) {
      throw Fatal("--format exports the whole chain: it takes no filter or --limit (use --after)",
                  exit_code::k_usage);
    }
    return run_fleet_export(invocation);
  }
  for (const char* option : {"follow", "syslog", "socket", "output", "hostname", "after"}) {
    if (invocation.options.count(option) != 0) {
      throw Fatal(std::string("--") + option + " needs --format fleet or --format ocsf",
                  exit_code::k_usage);
    }
  }
  return list_runs_as(invocation, Order::oldest_first, Format::jsonl);
}

int run_decisions(const Invocation& invocation) {
  Source source(invocation);
  Filter filter = filter_for(invocation, Subject::decisions);
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, decision_fields(),
                                decision_table_columns(), invocation.color);
  query_decisions(source.database(), filter, limit_of(invocation), *writer);
  return 0;
}

// --run, --name and --verdict: the connections' own columns.
Filter connection_filter(const Invocation& invocation) {
  Filter filter;
  auto add = [&](const char* option, const std::string& clause) {
    if (invocation.options.count(option) != 0) {
      filter.where += " AND " + clause;
      filter.params.emplace_back(invocation.options[option].as<std::string>());
    }
  };
  add("run", "run_id GLOB ? || '*'");
  add("name", "name GLOB ?");
  if (invocation.options.count("verdict") != 0) {
    std::string verdict = invocation.options["verdict"].as<std::string>();
    if (verdict != "allowed" && verdict != "refused") {
      throw Fatal("bad value " + quoted(verdict) + " for --verdict: expected allowed or refused",
                  exit_code::k_usage);
    }
  }
  add("verdict", "verdict = ?");
  return filter;
}

int run_connections(const Invocation& invocation) {
  Source source(invocation);
  Filter runs = filter_for(invocation, Subject::runs);
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, connection_fields(),
                                connection_table_columns(), invocation.color);
  query_connections(source.database(), runs, connection_filter(invocation), limit_of(invocation),
                    *writer);
  return 0;
}

// One JSON document: indented for --json, on one line for --jsonl.
void write_document(const Invocation& invocation, const Row& document, Format format) {
  invocation.out << to_json_text(document, format == Format::jsonl ? -1 : 2) << '\n';
}

// `show` on a terminal: one field a line, then the output tails and the hook decisions.
void write_run_details(std::ostream& out, const Row& run, bool color) {
  constexpr std::string_view k_blocks[] = {"stdout_tail", "stderr_tail", "decisions"};
  auto is_block = [&](const std::string& key) {
    return std::find(std::begin(k_blocks), std::end(k_blocks), key) != std::end(k_blocks);
  };
  for (const auto& [key, value] : run.items()) {
    if (!is_block(key)) {
      out << key << std::string(key.size() < 16 ? 16 - key.size() : 1, ' ')
          << printable(cell_text(value)) << '\n';
    }
  }
  for (const auto& [tail, bytes] :
       {std::pair{"stdout_tail", "stdout_bytes"}, std::pair{"stderr_tail", "stderr_bytes"}}) {
    std::string text = printable(cell_text(run[tail]), true);
    bool ends_line = text.empty() || text.back() == '\n';
    out << '\n'
        << tail << " (of " << render_field(run, bytes) << " bytes in all):\n"
        << text << (ends_line ? "" : "\n");
  }
  out << "\ndecisions:\n";
  auto writer =
      make_row_writer(Format::table, out, decision_fields(), decision_table_columns(), color);
  for (const auto& decision : run["decisions"]) {
    writer->write(decision);
  }
  writer->finish();
}

int run_show(const Invocation& invocation) {
  Source source(invocation);
  std::string id = invocation.options["id"].as<std::string>();
  auto run = find_run(source.database(), id, invocation.context.viewer.only_uid);
  if (!run) {
    throw Fatal("no run matches " + quoted(id) + "; see `sandshim audit list`", 1);
  }
  Format format = chosen_format(invocation);
  if (format == Format::table) {
    write_run_details(invocation.out, *run, invocation.color);
  } else if (format == Format::csv) {
    auto fields = run_fields();
    fields.emplace_back("decisions");
    auto writer = make_row_writer(format, invocation.out, fields, {});
    writer->write(*run);
    writer->finish();
  } else {
    write_document(invocation, *run, format);
  }
  return 0;
}

void write_rows(const Invocation& invocation, const std::vector<std::string>& fields,
                const std::vector<Row>& rows) {
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, fields,
                                plain_columns(fields), invocation.color);
  for (const auto& row : rows) {
    writer->write(row);
  }
  writer->finish();
}

int run_daily_stats(const Invocation& invocation, Database& db, const Filter& filter) {
  if (invocation.options["by"].as<std::string>() != "day") {
    throw Fatal("bad value " + quoted(invocation.options["by"].as<std::string>()) +
                    " for --by: expected day",
                exit_code::k_usage);
  }
  std::vector<Row> rows;
  for (const auto& day : compute_daily_stats(db, filter)) {
    rows.push_back(day_row(day));
  }
  write_rows(invocation, day_fields(), rows);
  return 0;
}

int run_stats(const Invocation& invocation) {
  Source source(invocation);
  Filter filter = filter_for(invocation, Subject::runs);
  if (invocation.options.count("by") != 0) {
    return run_daily_stats(invocation, source.database(), filter);
  }
  Stats stats = compute_stats(source.database(), filter);
  Format format = chosen_format(invocation);
  if (format == Format::json || format == Format::jsonl) {
    write_document(invocation, stats_json(stats), format);
  } else {
    write_rows(invocation, {"group", "key", "value"}, stats_rows(stats));
  }
  return 0;
}

std::string describe_anchor(const ChainState& state) {
  if (state.anchor_seq == 0) {
    return "";
  }
  std::string when = state.anchor_ms ? " on " + format_iso8601_ms(*state.anchor_ms) : "";
  return "; it starts after position " + std::to_string(state.anchor_seq) + ", pruned" + when;
}

// --key and --anchor, else the context's for the configured database.
std::filesystem::path integrity_file(const Invocation& invocation, const std::string& option,
                                     const std::filesystem::path& configured) {
  if (invocation.options.count(option) != 0) {
    if (option == "key") {
      return invocation.options[option].as<std::vector<std::string>>().back();
    }
    return invocation.options[option].as<std::string>();
  }
  return invocation.is_configured_db ? configured : std::filesystem::path();
}

struct Integrity {
  std::optional<ChainKey> key;
  VerifyOptions options;
};

// The key when this process may read it, and the anchor log when it is configured.
Integrity integrity_of(const Invocation& invocation) {
  Integrity integrity;
  auto key_file = integrity_file(invocation, "key", invocation.context.key_file);
  if (!key_file.empty()) {
    integrity.key = read_chain_key(key_file);
  }
  integrity.options.anchor_file =
      integrity_file(invocation, "anchor", invocation.context.anchor_file);
  return integrity;
}

VerifyOptions options_of(const Integrity& integrity) {
  VerifyOptions options = integrity.options;
  options.key = integrity.key ? &*integrity.key : nullptr;
  return options;
}

Row host_report_json(const HostReport& host) {
  Row faults = Row::array();
  for (const auto& fault : host.faults) {
    faults.push_back(Row{{"fault", fault.fault},
                         {"seq", fault.seq},
                         {"source", fault.source},
                         {"problem", fault.problem}});
  }
  return Row{{"host", host.host},         {"chain_id", host.chain_id},
             {"rows", host.rows},         {"first_seq", host.first_seq},
             {"last_seq", host.last_seq}, {"head_seq", host.head_seq},
             {"keyed", host.keyed},       {"faults", faults}};
}

// One line a host, then one a fault; every text from the export is escaped (escape_text).
void write_export_report(std::ostream& out, const ExportVerifyResult& result) {
  size_t faults = 0;
  for (const auto& host : result.hosts) {
    out << "host " << escape_text(host.host) << " (chain " << escape_text(host.chain_id)
        << "): " << host.rows << " rows, positions " << host.first_seq << " to " << host.last_seq
        << ", head " << host.head_seq << (host.keyed ? ", keyed" : ", unkeyed") << ": "
        << (host.faults.empty() ? "ok" : std::to_string(host.faults.size()) + " faults") << '\n';
    for (const auto& fault : host.faults) {
      out << "  FAILED (" << fault.fault << ") host " << escape_text(host.host) << " position "
          << fault.seq << (fault.source.empty() ? "" : " at " + escape_text(fault.source)) << ": "
          << escape_text(fault.problem) << '\n';
    }
    faults += host.faults.size();
  }
  out << (result.ok ? "ok: " : "FAILED: ") << result.hosts.size() << " hosts, " << faults
      << " faults\n";
}

// verify --export: each host's records against its own key (--key HOST=PATH, --key-dir).
int run_verify_exports(const Invocation& invocation) {
  std::vector<std::string> pairs;
  if (invocation.options.count("key") != 0) {
    pairs = invocation.options["key"].as<std::vector<std::string>>();
  }
  std::filesystem::path key_dir;
  if (invocation.options.count("key-dir") != 0) {
    key_dir = invocation.options["key-dir"].as<std::string>();
  }
  ExportVerifyResult result =
      verify_exports(read_exports(export_files(invocation)), read_host_keys(pairs, key_dir));
  if (invocation.options.count("json") != 0) {
    Row hosts = Row::array();
    for (const auto& host : result.hosts) {
      hosts.push_back(host_report_json(host));
    }
    write_document(invocation, Row{{"ok", result.ok}, {"hosts", hosts}}, Format::json);
  } else {
    write_export_report(invocation.out, result);
  }
  return result.ok ? 0 : 1;
}

int run_verify(const Invocation& invocation) {
  if (from_export(invocation)) {
    return run_verify_exports(invocation);
  }
  Store store = open_store(invocation, false);
  Integrity integrity = integrity_of(invocation);
  VerifyResult result = verify_chain(store.database(), options_of(integrity));
  if (invocation.options.count("json") != 0) {
    write_document(invocation,
                   Row{{"ok", result.ok},
                       {"fault", to_string(result.fault)},
                       {"problem", result.problem},
                       {"rows_checked", result.links_checked},
                       {"head_seq", result.state.head_seq},
                       {"head_hash", result.state.head_hash},
                       {"anchor_seq", result.state.anchor_seq},
                       {"chain_id", result.state.chain_id},
                       {"keyed", result.state.keyed()},
                       {"anchored_heads", result.anchored_heads},
                       {"assurance", result.assurance}},
                   Format::json);
  } else if (result.ok) {
    invocation.out << "ok: " << result.links_checked << " rows verified; chain head "
                   << result.state.head_seq << " " << (result.state.keyed() ? "hmac:" : "sha256:")
                   << result.state.head_hash << describe_anchor(result.state) << "; "
                   << result.assurance << '\n';
  } else {
    invocation.out << "FAILED (" << to_string(result.fault) << "): " << result.problem << '\n';
  }
  return result.ok ? 0 : 1;
}

void write_prune_result(const Invocation& invocation, const PruneResult& result, int64_t cutoff,
                        bool dry_run) {
  if (invocation.options.count("json") != 0) {
    write_document(invocation,
                   Row{{"dry_run", dry_run},
                       {"runs_deleted", result.runs_deleted},
                       {"decisions_deleted", result.decisions_deleted},
                       {"anchor_seq", result.anchor_seq}},
                   Format::json);
    return;
  }
  invocation.out << (dry_run ? "would prune " : "pruned ") << result.runs_deleted << " runs and "
                 << result.decisions_deleted << " decisions finished before "
                 << format_iso8601_ms(cutoff) << "; the chain starts after position "
                 << result.anchor_seq << '\n';
}

Store open_store_for_prune(const Invocation& invocation, const Integrity& integrity) {
  StoreOptions options{invocation.db_path, std::chrono::milliseconds(5000), false, false};
  options.key = integrity.key;
  options.adopt_key = false;
  options.anchor_file = integrity.options.anchor_file;
  return Store::open(options);
}

int run_prune(const Invocation& invocation) {
  if (invocation.options.count("older-than") == 0) {
    throw Fatal("prune needs --older-than (for example --older-than 30d)", exit_code::k_usage);
  }
  if (!invocation.context.viewer.administrator) {
    administrators_only("prune");
  }
  int64_t cutoff = parse_time_spec(invocation.options["older-than"].as<std::string>(),
                                   invocation.now_ms, "older-than");
  bool dry_run = invocation.options.count("dry-run") != 0;
  Integrity integrity = integrity_of(invocation);
  Store store = open_store_for_prune(invocation, integrity);
  PruneResult result =
      prune_chain(store.database(), cutoff, invocation.now_ms, dry_run, options_of(integrity));
  if (!dry_run) {
    if (result.runs_deleted + result.decisions_deleted > 0) {
      store.anchor_prune(result.chain_id, result.anchor_seq, result.anchor_hash);
    }
    store.checkpoint();
  }
  write_prune_result(invocation, result, cutoff, dry_run);
  return 0;
}

int run_sql(const Invocation& invocation) {
  if (invocation.context.viewer.only_uid) {
    administrators_only("sql");  // a statement could read every user's rows
  }
  Source source(invocation);
  Statement statement =
      prepare_read_only_sql(source.database(), invocation.options["query"].as<std::string>());
  auto fields = column_names(statement);
  auto writer = make_row_writer(chosen_format(invocation), invocation.out, fields,
                                plain_columns(fields), invocation.color);
  stream_sql(statement, *writer);
  return 0;
}

constexpr Subcommand k_subcommands[] = {
    {"list", "list recorded runs, newest first",
     "Lists the runs sandshim recorded, newest first, filtered by the options below. A table on a "
     "terminal; JSON lines when piped, unless a format is given.",
     "  sandshim audit list                                 the last 100 runs\n"
     "  sandshim audit list --since 2h --status error,timeout\n"
     "  sandshim audit list --agent claude-code --cwd ~/src/app --limit 20\n"
     "  sandshim audit list --since 2024-05-01 --until 2024-05-02 --csv > may-1.csv\n"
     "  sandshim audit list --json | jq '.[] | select(.exit_code != 0) | .argv'\n",
     "", k_run_filters | k_formats | k_limit | k_from_export, 100, run_list},
    {"show", "everything about one run, output tails included",
     "Shows every field of one run, its stdout and stderr tails, and the hook decisions linked "
     "to it by tool_use_id. ID may be any unique prefix of a run id.",
     "  sandshim audit show 3f2a9c\n"
     "  sandshim audit show 3f2a9c --json | jq -r .stderr_tail\n",
     "id", k_formats | k_from_export, 0, run_show},
    {"stats", "counts by status, command, image and agent; duration percentiles",
     "Counts runs by status, command, image and agent, with the p50, p95 and max duration of "
     "finished runs (nearest rank, milliseconds). --by day gives one row a day (UTC).",
     "  sandshim audit stats\n"
     "  sandshim audit stats --since 7d --by day\n"
     "  sandshim audit stats --agent codex --json\n",
     "", k_run_filters | k_formats | k_stats | k_from_export, 0, run_stats},
    {"export", "every field of every matching run, oldest first; a fleet's feed",
     "Writes every field of the matching runs, oldest first, as JSON lines unless a format is "
     "given: for archives and other tools. --format fleet writes the whole chain instead (runs "
     "and decisions, every chained column typed, each link's hash, the chain's heads with their "
     "HMAC, the host's name) for `audit verify --export` and queries over merged exports; "
     "--format ocsf writes OCSF events (Process Activity, API Activity). Both go to stdout, "
     "--output, --syslog or --socket, once or with --follow as rows are chained.",
     "  sandshim audit export > audit.jsonl\n"
     "  sandshim audit export --since 30d --csv > last-30-days.csv\n"
     "  sandshim audit export --format fleet --follow --output /var/log/sandshim-fleet.jsonl\n"
     "  sandshim audit export --format ocsf --follow --syslog\n",
     "", k_run_filters | k_formats | k_limit | k_fleet_export, 0, run_export},
    {"verify", "check the hash chain; exit 1 names the first tampered row",
     "Checks the file's integrity and recomputes the SHA-256 chain over every finished run and "
     "decision. Exit 0 when intact; exit 1 names the first row that was changed, deleted or "
     "inserted out of order. Note the head hash elsewhere to detect a rewrite of the whole chain. "
     "With --export FILE... it verifies merged fleet exports host by host and names every gap, "
     "reordering, edit and cut-off tail with its host and position.",
     "  sandshim audit verify && echo intact\n"
     "  sandshim audit verify --json\n"
     "  sandshim audit verify --export a.jsonl b.jsonl --key a=/keys/a.key --key b=/keys/b.key\n",
     "", k_json | k_integrity | k_from_export, 0, run_verify},
    {"prune", "delete old rows; verify keeps passing",
     "Deletes runs and decisions finished before the cutoff (the oldest part of the chain) and "
     "records the last deleted row's hash as the chain's anchor, so `verify` still passes. "
     "Refuses a chain that does not verify. Running rows are left for `sandshim gc`.",
     "  sandshim audit prune --older-than 30d --dry-run\n"
     "  sandshim audit prune --older-than 2024-01-01\n",
     "", k_prune | k_json | k_integrity, 0, run_prune},
    {"sql", "run one read-only SQL statement",
     "Runs one SELECT on a read-only connection; statements that could write are refused. Tables: "
     "runs, decisions, connections, chain_state, and run_counts (finished runs a day by status, "
     "command, "
     "image and agent); their columns are the fields that `export` and `decisions` print.",
     "  sandshim audit sql \"SELECT image, count(*) AS runs FROM runs GROUP BY image\"\n"
     "  sandshim audit sql \"SELECT run_id, a.value FROM runs, json_each(runs.argv) AS a WHERE "
     "a.value LIKE '%curl%'\"\n"
     "  sandshim audit sql \"SELECT decision, count(*) FROM decisions GROUP BY 1\" --csv\n",
     "query", k_formats | k_from_export, 0, run_sql},
    {"decisions", "list hook decisions, newest first",
     "Lists what the agents' hooks asked and what sandshim answered (allow, deny, ask, rewrite), "
     "with the outcome PostToolUse reported.",
     "  sandshim audit decisions --decision deny --since 1d\n"
     "  sandshim audit decisions --tool-use toolu_01ABC --json\n",
     "", k_decision_filters | k_formats | k_limit | k_from_export, 100, run_decisions},
    {"connections", "list the connections of egress proxies (sandbox.network = allowlist)",
     "Lists each connection a run's egress proxy saw, newest first: the name and port asked for, "
     "the address connected to, allowed or refused and why, bytes each way and duration. The run "
     "filters select the runs whose connections are listed.",
     "  sandshim audit connections --verdict refused --since 1d\n"
     "  sandshim audit connections --run 3f2a9c --json\n"
     "  sandshim audit connections --name '*.pythonhosted.org' --csv\n",
     "", k_run_filters | k_connection_filters | k_formats | k_limit, 100, run_connections},
};

void add_filter_options(po::options_description& options, Subject subject) {
  for (const auto& spec : filter_specs()) {
    if (!filter_column(spec, subject).empty()) {
      options.add_options()(std::string(spec.option).c_str(),
                            po::value<std::string>()->value_name(std::string(spec.value_name)),
                            std::string(spec.help).c_str());
    }
  }
}

void add_group_options(po::options_description& options, const Subcommand& command) {
  unsigned groups = command.option_groups;
  if ((groups & k_run_filters) != 0) {
    add_filter_options(options, Subject::runs);
  }
  if ((groups & k_decision_filters) != 0) {
    add_filter_options(options, Subject::decisions);
  }
  if ((groups & k_connection_filters) != 0) {
    options.add_options()("run", po::value<std::string>()->value_name("ID"),
                          "only connections of this run (or a prefix of its id)")(
        "name", po::value<std::string>()->value_name("NAME"),
        "only connections to NAME (globs like *.example.com work)")(
        "verdict", po::value<std::string>()->value_name("allowed|refused"),
        "only allowed or only refused connections");
  }
  if ((groups & k_limit) != 0) {
    options.add_options()(
        "limit", po::value<int64_t>()->default_value(command.default_limit)->value_name("N"),
        "show at most N rows; 0 for all");
  }
  if ((groups & k_stats) != 0) {
    options.add_options()("by", po::value<std::string>()->value_name("day"), "one row a day (UTC)");
  }
  if ((groups & k_prune) != 0) {
    options.add_options()("older-than", po::value<std::string>()->value_name("AGE"),
                          "delete what finished before AGE ago (30d) or a date (2024-01-01)")(
        "dry-run", "say what would be deleted, delete nothing");
  }
  if ((groups & k_from_export) != 0) {
    options.add_options()(
        "export",
        po::value<std::vector<std::string>>()->multitoken()->composing()->value_name("FILE..."),
        "read fleet exports (audit export --format fleet, merged) instead of the database");
  }
  if ((groups & k_fleet_export) != 0) {
    options.add_options()("format", po::value<std::string>()->value_name("fleet|ocsf"),
                          "the whole chain with its heads for a fleet's collector (fleet), or "
                          "OCSF events (ocsf)")(
        "hostname", po::value<std::string>()->value_name("NAME"),
        "the name the records give this host (default: its host name)")(
        "after", po::value<int64_t>()->value_name("SEQ"),
        "start after chain position SEQ (default: the chain's start)")(
        "follow", "keep writing new rows as they are chained")(
        "output", po::value<std::string>()->value_name("FILE"), "append to FILE")(
        "syslog", "one record a syslog(3) message")("socket",
                                                    po::value<std::string>()->value_name("PATH"),
                                                    "write to a collector's unix socket");
  }
  if ((groups & k_integrity) != 0) {
    options.add_options()("key",
                          po::value<std::vector<std::string>>()->composing()->value_name("PATH"),
                          "the chain's HMAC key (default: audit.key_file, for audit.db); with "
                          "--export, HOST=PATH once per host")(
        "anchor", po::value<std::string>()->value_name("PATH"),
        "the anchor log (default: audit.anchor_file, for audit.db)")(
        "key-dir", po::value<std::string>()->value_name("DIR"),
        "with --export: each host's key as DIR/HOST.key");
  }
}

void add_format_options(po::options_description& options, unsigned groups) {
  if ((groups & k_formats) != 0) {
    options.add_options()("table", "an aligned table (the default on a terminal)")(
        "json", "one JSON document")("jsonl", "one JSON object a line (the default when piped)")(
        "csv", "CSV with a header line (RFC 4180 quoting)");
  } else if ((groups & k_json) != 0) {
    options.add_options()("json", "a JSON object instead of a line of text");
  }
}

po::options_description visible_options(const Subcommand& command) {
  po::options_description options("Options");
  add_group_options(options, command);
  add_format_options(options, command.option_groups);
  options.add_options()("db", po::value<std::string>()->value_name("PATH"),
                        "the audit database (else $SANDSHIM_AUDIT_DB, the policy's audit.db, "
                        "~/.local/state/sandshim/audit.db)")("help,h", "show this help");
  return options;
}

std::string to_upper(std::string_view text) {
  std::string upper(text);
  for (auto& c : upper) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return upper;
}

// The text broken into lines of at most `width` characters, at spaces.
std::string wrapped(std::string_view text, size_t width) {
  std::string result;
  size_t line_start = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = std::min(text.find(' ', begin), text.size());
    std::string_view word = text.substr(begin, end - begin);
    if (result.size() > line_start && result.size() - line_start + 1 + word.size() > width) {
      result += '\n';
      line_start = result.size();
    } else if (result.size() > line_start) {
      result += ' ';
    }
    result += word;
    begin = end + 1;
  }
  return result;
}

CommandDoc doc_of(const Subcommand& command) {
  std::string operand = command.positional.empty() ? "" : " " + to_upper(command.positional);
  std::string name(command.name);
  return CommandDoc{"audit " + name,
                    std::string(command.summary),
                    "usage: sandshim audit " + name + operand + " [options]\n\n" +
                        wrapped(command.description, 80),
                    std::make_shared<po::options_description>(visible_options(command)),
                    "\nExamples:\n" + std::string(command.examples),
                    {}};
}

void print_help(std::ostream& out, const CommandDoc& doc) {
  out << doc.usage << "\n\n" << *doc.options << doc.epilogue;
}

std::string overview_text() {
  std::string text =
      "usage: sandshim audit COMMAND [options]\n\n"
      "Reads the audit database: every run sandshim made and every hook decision, chained\n"
      "with SHA-256 so edits show.\n\nCommands:\n";
  for (const auto& command : k_subcommands) {
    text += "  " + std::string(command.name) + std::string(11 - command.name.size(), ' ') +
            std::string(command.summary) + '\n';
  }
  return text +
         "\nThe database: --db PATH, else $SANDSHIM_AUDIT_DB, else the policy's audit.db, else\n"
         "~/.local/state/sandshim/audit.db. Exit status: 0 ok, 1 verify failed or nothing found,\n"
         "2 bad usage, 125 the database is unusable.\n"
         "Run `sandshim audit COMMAND --help` for its options and examples.\n";
}

CommandDoc overview_doc() {
  auto options = std::make_shared<po::options_description>("Options");
  options->add_options()("db", po::value<std::string>()->value_name("PATH"),
                         "the audit database, before or after COMMAND")("help,h", "show this help");
  std::vector<std::string> names;
  for (const auto& command : k_subcommands) {
    names.emplace_back(command.name);
  }
  return CommandDoc{"audit", "query and verify the audit database", overview_text(), options, "",
                    names};
}

const Subcommand& find_subcommand(const std::string& name) {
  for (const auto& command : k_subcommands) {
    if (command.name == name) {
      return command;
    }
  }
  throw Fatal("unknown audit command " + quoted(name) + "; see `sandshim audit --help`",
              exit_code::k_usage);
}

po::variables_map parse_options(const Subcommand& command, const std::vector<std::string>& args) {
  po::options_description all = visible_options(command);
  po::positional_options_description positional;
  if (!command.positional.empty()) {
    all.add_options()(std::string(command.positional).c_str(), po::value<std::string>());
    positional.add(std::string(command.positional).c_str(), 1);
  }
  po::variables_map options;
  try {
    po::store(
        po::command_line_parser(args)
            .options(all)
            .positional(positional)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        options);
    po::notify(options);
  } catch (const po::error& error) {
    throw Fatal(std::string(error.what()) + "; see `sandshim audit " + std::string(command.name) +
                    " --help`",
                exit_code::k_usage);
  }
  return options;
}

std::filesystem::path database_path(const po::variables_map& options,
                                    const std::filesystem::path& configured_db) {
  if (options.count("db") != 0) {
    return options["db"].as<std::string>();
  }
  return resolve_audit_db(configured_db);
}

int run_subcommand(const Subcommand& command, const std::vector<std::string>& args,
                   const AuditContext& context, std::ostream& out, bool tty, bool color) {
  po::variables_map options = parse_options(command, args);
  if (options.count("help") != 0) {
    print_help(out, doc_of(command));
    return 0;
  }
  if (!command.positional.empty() && options.count(std::string(command.positional)) == 0) {
    throw Fatal("sandshim audit " + std::string(command.name) + " needs " +
                    to_upper(command.positional) + "; see `sandshim audit " +
                    std::string(command.name) + " --help`",
                exit_code::k_usage);
  }
  if (context.viewer.only_uid) {
    for (const char* option : {"db", "key", "anchor"}) {
      if (options.count(option) != 0) {
        throw Fatal(std::string("--") + option +
                        " is for administrators: the broker reads its own audit database",
                    exit_code::k_usage);
      }
    }
  }
  std::filesystem::path db_path = database_path(options, context.configured_db);
  bool configured = !context.configured_db.empty() && db_path == context.configured_db;
  return command.run(Invocation{std::move(options), db_path, out, tty, wall_clock_ms(), color,
                                context, configured});
}

// `--db PATH` may also come before the command: `sandshim audit --db x.db list`.
std::vector<std::string> with_db_after_command(std::vector<std::string> args) {
  size_t db_words = 0;
  if (!args.empty() && args[0].rfind("--db=", 0) == 0) {
    db_words = 1;
  } else if (args.size() >= 2 && args[0] == "--db") {
    db_words = 2;
  }
  std::rotate(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(db_words), args.end());
  return args;
}

}  // namespace

int audit_main(const std::vector<std::string>& raw_args, const AuditContext& context,
               std::ostream& out, bool out_is_tty, bool color) {
  std::vector<std::string> args = with_db_after_command(raw_args);
  if (args.empty()) {
    throw Fatal("missing command; see `sandshim audit --help`", exit_code::k_usage);
  }
  const std::string& first = args.front();
  if (first == "--help" || first == "-h" || first == "help") {
    if (args.size() > 1 && first == "help") {
      print_help(out, doc_of(find_subcommand(args[1])));
    } else {
      out << overview_text();
    }
    return 0;
  }
  const Subcommand& command = find_subcommand(first);
  return run_subcommand(command, std::vector<std::string>(args.begin() + 1, args.end()), context,
                        out, out_is_tty, color);
}

int audit_main(const std::vector<std::string>& args, const std::filesystem::path& configured_db,
               std::ostream& out, bool out_is_tty, bool color) {
  AuditContext context;
  context.configured_db = configured_db;
  return audit_main(args, context, out, out_is_tty, color);
}

Viewer Viewer::this_process() {
  uid_t uid = ::geteuid();
  const struct passwd* broker = ::getpwnam(k_broker_user);
  return Viewer{std::nullopt, uid == 0 || (broker != nullptr && broker->pw_uid == uid)};
}

Viewer Viewer::caller(uint32_t uid, uint32_t broker_uid) {
  bool administrator = uid == 0 || uid == broker_uid;
  return Viewer{administrator ? std::nullopt : std::optional(uid), administrator};
}

int audit_main(const std::vector<std::string>& args, const std::filesystem::path& configured_db) {
  return audit_main(args, configured_db, std::cout, ::isatty(STDOUT_FILENO) == 1,
                    terminal::use_color(STDOUT_FILENO));
}

int audit_main(const std::vector<std::string>& args) {
  return audit_main(args, {});
}

bool runs_as_caller(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    for (std::string_view option :
         {"--export", "--output", "--socket", "--syslog", "--follow", "--key-dir"}) {
      if (arg == option || arg.starts_with(std::string(option) + "=")) {
        return true;
      }
    }
  }
  return false;
}

std::vector<CommandDoc> command_docs() {
  std::vector<CommandDoc> docs = {overview_doc()};
  for (const auto& command : k_subcommands) {
    docs.push_back(doc_of(command));
  }
  return docs;
}

}  // namespace sandshim::audit
