#include "audit/commands.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>

#include "audit/command_detail.hpp"
#include "audit/environment.hpp"
#include "audit/query.hpp"
#include "audit/store.hpp"
#include "common/error.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/terminal.hpp"

namespace sandshim::audit {

using namespace command_detail;

namespace {

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

void add_connection_filter_options(po::options_description& options) {
  options.add_options()("run", po::value<std::string>()->value_name("ID"),
                        "only connections of this run (or a prefix of its id)")(
      "name", po::value<std::string>()->value_name("NAME"),
      "only connections to NAME (globs like *.example.com work)")(
      "verdict", po::value<std::string>()->value_name("allowed|refused"),
      "only allowed or only refused connections");
}

void add_limit_option(po::options_description& options, int64_t default_limit) {
  options.add_options()("limit",
                        po::value<int64_t>()->default_value(default_limit)->value_name("N"),
                        "show at most N rows; 0 for all");
}

void add_from_export_option(po::options_description& options) {
  options.add_options()(
      "export",
      po::value<std::vector<std::string>>()->multitoken()->composing()->value_name("FILE..."),
      "read fleet exports (audit export --format fleet, merged) instead of the database");
}

void add_prune_options(po::options_description& options) {
  options.add_options()("older-than", po::value<std::string>()->value_name("AGE"),
                        "delete what finished before AGE ago (30d) or a date (2024-01-01)")(
      "dry-run", "say what would be deleted, delete nothing");
}

void add_fleet_export_options(po::options_description& options) {
  options.add_options()("format", po::value<std::string>()->value_name("fleet|ocsf"),
                        "the whole chain with its heads for a fleet's collector (fleet), or "
                        "OCSF events (ocsf)")(
      "hostname", po::value<std::string>()->value_name("NAME"),
      "the name the records give this host (default: its host name)")(
      "after", po::value<int64_t>()->value_name("SEQ"),
      "start after chain position SEQ (default: the chain's start)")(
      "follow", "keep writing new rows as they are chained")(
      "output", po::value<std::string>()->value_name("FILE"), "append to FILE")(
      "syslog", "one record a syslog(3) message")(
      "socket", po::value<std::string>()->value_name("PATH"), "write to a collector's unix socket");
}

void add_integrity_options(po::options_description& options) {
  options.add_options()("key",
                        po::value<std::vector<std::string>>()->composing()->value_name("PATH"),
                        "the chain's HMAC key (default: audit.key_file, for audit.db); with "
                        "--export, HOST=PATH once per host")(
      "anchor", po::value<std::string>()->value_name("PATH"),
      "the anchor log (default: audit.anchor_file, for audit.db)")(
      "key-dir", po::value<std::string>()->value_name("DIR"),
      "with --export: each host's key as DIR/HOST.key");
}

// Each subcommand names the option groups it takes; the groups are added in a fixed order so
// --help lists them the same way for every subcommand.
void add_group_options(po::options_description& options, const Subcommand& command) {
  unsigned groups = command.option_groups;
  if ((groups & k_run_filters) != 0) {
    add_filter_options(options, Subject::runs);
  }
  if ((groups & k_decision_filters) != 0) {
    add_filter_options(options, Subject::decisions);
  }
  if ((groups & k_connection_filters) != 0) {
    add_connection_filter_options(options);
  }
  if ((groups & k_limit) != 0) {
    add_limit_option(options, command.default_limit);
  }
  if ((groups & k_stats) != 0) {
    options.add_options()("by", po::value<std::string>()->value_name("day"), "one row a day (UTC)");
  }
  if ((groups & k_prune) != 0) {
    add_prune_options(options);
  }
  if ((groups & k_from_export) != 0) {
    add_from_export_option(options);
  }
  if ((groups & k_fleet_export) != 0) {
    add_fleet_export_options(options);
  }
  if ((groups & k_integrity) != 0) {
    add_integrity_options(options);
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