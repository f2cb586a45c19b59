#include "broker/serve.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <iostream>

#include "audit/commands.hpp"
#include "audit/store.hpp"
#include "broker/status.hpp"
#include "common/error.hpp"
#include "common/process.hpp"
#include "common/terminal.hpp"
#include "policy/broker_policy.hpp"
#include "policy/environment.hpp"
#include "run/caller.hpp"
#include "run/guardian.hpp"
#include "run/sandbox.hpp"
#include "shim/commands.hpp"

namespace sandshim::broker {

namespace {

std::filesystem::path system_file() {
  return shim::broker_policy_source().value_or(shim::BrokerPolicySource{}).system_file;
}

// The broker's system file alone: the floor every request starts from, and the audit's place.
shim::Policy system_policy() {
  return shim::load_policy(
      shim::policy_inputs(shim::BrokerPolicySource{system_file(), {}, {}}, {}));
}

// The floor for filtering a caller's variables; a broken system file fails the run later, with
// its own line, so the built-in allowlist filters until then.
shim::Policy floor_or_defaults() {
  try {
    return system_policy();
  } catch (const Fatal&) {
    return shim::Policy{};
  }
}

shim::Caller caller_of(const RunCall& call) {
  shim::Caller caller = shim::identify_caller({});  // the peer (act_for_caller), this host
  caller.agent = call.agent.empty() ? "unknown" : call.agent;
  caller.agent_session = call.session_id;
  caller.tool_use_id = call.tool_use_id;
  return caller;
}

}  // namespace

std::filesystem::path broker_audit_db() {
  try {
    return system_policy().effective_audit_db();
  } catch (const Fatal&) {
    return {};
  }
}

namespace {

audit::Store broker_store(const shim::Policy& policy) {
  return audit::Store::open(shim::audit_store_options(policy, policy.effective_audit_db(), true));
}

// Path mode (Claude Code, Gemini CLI): the caller's own pending decision for the command its
// shell runs, in the broker's audit, in the session when the run names one ("" when none, or
// the audit cannot be read: the run is then joined by session alone).
std::string callers_tool_use_id(const RunCall& call, uid_t uid) {
  if (!call.tool_use_id.empty() || call.agent_command.empty() || call.agent.empty()) {
    return call.tool_use_id;
  }
  try {
    audit::Store store = broker_store(system_policy());
    return store.pending_tool_use_id(call.agent, call.session_id, call.agent_command, uid);
  } catch (const std::exception& e) {
    spdlog::debug("broker: no decision found for the run's command: {}", e.what());
    return "";
  }
}

int serve_run(const RunCall& call, const CallerFacts& facts) {
  shim::RunRequest request = run_request_of(call, facts, floor_or_defaults());
  request.caller.tool_use_id = callers_tool_use_id(call, facts.peer.uid);
  if (call.invoked_as == "run") {
    return shim::run_command(call.argv, std::move(request));
  }
  return shim::shim_run(std::move(request));
}

audit::DecisionRecord decision_row(const DecisionFields& fields, uid_t uid) {
  audit::DecisionRecord row;
  row.time_ms = wall_clock_ms();
  row.agent = fields.agent;
  row.event = fields.event;
  row.session_id = fields.session_id;
  row.tool_use_id = fields.tool_use_id;
  row.cwd = fields.cwd;
  row.original_command = fields.original_command;
  row.rewritten_command = fields.rewritten_command;
  row.decision = audit::decision_from_string(fields.decision).value_or(audit::Decision::deny);
  row.answer = fields.answer;
  row.permission_mode = fields.permission_mode;
  row.reason = fields.reason;
  row.rule = fields.rule;
  row.payload_bytes = fields.payload_bytes;
  row.uid = uid;
  return row;
}

// One write of a hook's decision, with the peer's uid and the broker's clock.
int write_record(audit::Store& store, const RecordCall& call, uid_t uid) {
  if (const auto* fields = std::get_if<DecisionFields>(&call.write)) {
    store.record_decision(decision_row(*fields, uid));
    return exit_code::k_ok;
  }
  const auto& done = std::get<CompletionFields>(call.write);
  audit::DecisionCompletion completion{done.session_id, done.outcome, done.exit_code,
                                       wall_clock_ms(), done.tool_response_tail};
  return store.complete_decision(done.tool_use_id, completion, uid) ? exit_code::k_ok
                                                                    : k_record_not_pending;
}

// One write to the broker's audit, then the WAL's fold once the worker has exited: the store
// is closed first, so no SQLite state crosses the fold's fork.
// A write to the broker's audit, folded after this worker has exited.
template <typename Write>
auto write_then_fold(const Write& write) {
  shim::Policy policy = system_policy();
  return shim::write_then_fold([&] { return broker_store(policy); }, write);
}

int serve_record(const RecordCall& call, const CallerFacts& facts) {
  return write_then_fold(
      [&](audit::Store& store) { return write_record(store, call, facts.peer.uid); });
}

// `session_close`: the peer's own pending decisions of the session, closed; how many goes to the
// stdout the client sent.
int serve_session_close(const SessionCloseCall& call, const CallerFacts& facts) {
  size_t closed = write_then_fold([&](audit::Store& store) {
    return store.close_session_decisions(call.agent, call.session_id, facts.peer.uid);
  });
  std::cout << encode(SessionClosed{static_cast<int64_t>(closed)}) << std::flush;
  return std::cout ? exit_code::k_ok : exit_code::k_sandbox_error;
}

// Arguments that name a file or change the audit: an administrator's, never a caller's (the
// worker would open the file with the broker's rights).
void refuse_administrators_arguments(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    for (std::string_view word : {"prune", "--db", "--key", "--anchor"}) {
      if (arg == word || (word.starts_with("--") && arg.starts_with(std::string(word) + "="))) {
        throw Fatal("`sandshim audit " + arg +
                        "` is an administrator's command on the broker's audit; ask root",
                    exit_code::k_usage);
      }
    }
  }
}

// The broker's database, key and anchor as its system file names them, and the caller's own
// rows only (root and the broker's user see all).
audit::AuditContext callers_audit(const shim::Policy& policy, const CallerFacts& facts) {
  return {policy.effective_audit_db(), policy.audit_key_file, policy.audit_anchor_file,
          audit::Viewer::caller(facts.peer.uid, static_cast<uint32_t>(::getuid()))};
}

// `sandshim audit ARGS` on the broker's audit. A broken system file fails closed.
int serve_audit(const AuditCall& call, const CallerFacts& facts) {
  if (facts.peer.uid != 0) {
    refuse_administrators_arguments(call.args);
  }
  if (audit::runs_as_caller(call.args)) {
    throw Fatal(
        "`sandshim audit` with --export, --output, --socket, --syslog, --follow or "
        "--key-dir runs as its caller, not in the broker",
        exit_code::k_usage);
  }
  return audit::audit_main(call.args, callers_audit(system_policy(), facts), std::cout,
                           ::isatty(STDOUT_FILENO) == 1, terminal::use_color(STDOUT_FILENO));
}

// `status`: what the broker sees, on the stdout the client sent; the answer is 0 once written
// (a broken system file is part of the answer, not a failure of the verb).
int serve_status(const CallerFacts& facts) {
  shim::Policy policy = floor_or_defaults();
  std::cout << encode(broker_status(system_file(), callers_audit(policy, facts))) << std::flush;
  return std::cout ? exit_code::k_ok : exit_code::k_sandbox_error;
}

}  // namespace

shim::RunRequest run_request_of(const RunCall& call, const CallerFacts& facts,
                                const shim::Policy& floor) {
  shim::RunRequest request;
  request.invoked_as = call.invoked_as;
  request.command = call.argv;
  request.dry_run = call.dry_run;
  request.environment = shim::allowed_entries(call.env, floor);
  request.caller = caller_of(call);
  request.cwd = facts.cwd;
  request.home = facts.home;
  request.tty = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
  request.broker = shim::BrokerPolicySource{system_file(), call.user_config, facts.workspace_texts};
  if (call.version_ask) {
    request.version_ask =
        shim::claimed_version_ask(call.version_ask->source, call.version_ask->range);
  }
  request.git_identity = call.git_identity;
  request.tell_outcome = facts.tell_outcome;
  request.preopened_store = facts.preopened_store;
  return request;
}

std::shared_ptr<shim::PreopenedStore> preopen_broker_store() {
  return shim::preopen_broker_store(system_file());
}

int serve_request(const Request& request, const CallerFacts& facts) {
  if (const auto* run = std::get_if<RunCall>(&request.call)) {
    return serve_run(*run, facts);
  }
  if (const auto* record = std::get_if<RecordCall>(&request.call)) {
    return serve_record(*record, facts);
  }
  if (const auto* audit = std::get_if<AuditCall>(&request.call)) {
    return serve_audit(*audit, facts);
  }
  if (const auto* close = std::get_if<SessionCloseCall>(&request.call)) {
    return serve_session_close(*close, facts);
  }
  return serve_status(facts);
}

int refuse_request(const Request& request, const CallerFacts& facts, const std::string& refusal) {
  if (const auto* run = std::get_if<RunCall>(&request.call)) {
    return shim::record_broker_refusal(run_request_of(*run, facts, floor_or_defaults()), refusal);
  }
  std::cerr << "sandshim: " << refusal << std::endl;
  return exit_code::k_sandbox_error;
}

}  // namespace sandshim::broker
