// The commands of `sandshim audit` over the whole chain: verify (of the database or of fleet
// exports), prune, and export --format fleet|ocsf.
#include <chrono>
#include <fstream>
#include <thread>

#include "audit/chain.hpp"
#include "audit/command_detail.hpp"
#include "audit/fleet_export.hpp"
#include "audit/fleet_verify.hpp"
#include "audit/time_spec.hpp"
#include "common/error.hpp"
#include "common/escape.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"

namespace sandshim::audit::command_detail {

namespace {

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

// verify --json: the verdict with the chain's head and anchor, for scripts and monitoring.
Row verify_document(const VerifyResult& result) {
  return Row{{"ok", result.ok},
             {"fault", to_string(result.fault)},
             {"problem", result.problem},
             {"rows_checked", result.links_checked},
             {"head_seq", result.state.head_seq},
             {"head_hash", result.state.head_hash},
             {"anchor_seq", result.state.anchor_seq},
             {"chain_id", result.state.chain_id},
             {"keyed", result.state.keyed()},
             {"anchored_heads", result.anchored_heads},
             {"assurance", result.assurance}};
}

}  // namespace

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

int run_verify(const Invocation& invocation) {
  if (from_export(invocation)) {
    return run_verify_exports(invocation);
  }
  Store store = open_store(invocation, false);
  Integrity integrity = integrity_of(invocation);
  VerifyResult result = verify_chain(store.database(), options_of(integrity));
  if (invocation.options.count("json") != 0) {
    write_document(invocation, verify_document(result), Format::json);
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

}  // namespace sandshim::audit::command_detail
