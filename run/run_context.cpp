#include "run/run_context.hpp"

#include "common/error.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "run/caller.hpp"
#include "run/hardening.hpp"
#include "run/launcher_client.hpp"

namespace sandshim::shim {

using audit::RunRecord;
using audit::RunStatus;

namespace {

void describe_caller(RunRecord& row, const RunRequest& request) {
  row.invoked_as = request.invoked_as;
  row.argv = request.command;
  row.uid = request.caller.uid;
  row.host = request.caller.host;
  row.pid = request.caller.pid;
  row.ppid = request.caller.ppid;
  row.parent_name = request.caller.parent_name;
  row.agent = request.caller.agent;
  row.agent_session = request.caller.agent_session;
  row.tool_use_id = request.caller.tool_use_id;
  row.via = request.broker ? "broker" : "direct";
}

void describe_container(RunRecord& row, const RunContext& run) {
  const RunSpec& spec = *run.spec();
  row.engine = run.engine->describe();
  row.image = spec.image;
  row.container_name = spec.container_name();
  row.engine_args = run.create_args;
  row.engine_args.insert(row.engine_args.end(), run.call.args.begin(), run.call.args.end());
  row.policy_digest = run.policy.digest();
  row.policy_sources = run.policy.sources;
  row.limits = run.policy.limits_summary();
  if (!run.enforcement.empty()) {
    row.limits += " " + run.enforcement;
  }
  for (const auto& entry : spec.env) {
    row.env_names.push_back(entry.first);
  }
  row.warm = spec.warm;
  row.hidden_count = static_cast<int64_t>(spec.masks.paths.size());
  row.hidden_globs = spec.masks.matched_globs;
}

void describe_outcome(RunRecord& row, const ContainerResult& result) {
  row.status = result.status;
  row.exit_code = result.exit_code;
  row.signal = result.signal;
  std::vector<std::string> parts;
  for (const std::string* part : {&result.message, &result.transfer, &result.set_aside,
                                  &result.git_carry, &result.changed_note}) {
    if (!part->empty()) {
      parts.push_back(*part);
    }
  }
  row.message = join(parts, "; ");
  row.stdout_bytes = result.stdout_bytes;
  row.stderr_bytes = result.stderr_bytes;
  row.stdout_tail = result.stdout_tail;
  row.stderr_tail = result.stderr_tail;
  row.image_digest = result.image_id;
  row.limit_hit = result.limit_hit;
  if (result.changed) {
    row.changed_count = result.changed->count;
    row.changed_paths = result.changed->paths;
  }
}

}  // namespace

RunContext::RunContext(const RunRequest& request)
    : m_request(request), m_cold_run_id(new_run_id()), m_start_ms(wall_clock_ms()) {}

void RunContext::set_spec(RunSpec spec) {
  spec.run_id = m_cold_run_id;
  m_spec = std::move(spec);
}

void RunContext::take_warm(const PoolClaim& claim) {
  m_spec->run_id = claim.run_id;
  m_spec->warm = true;
  m_spec->image_id = claim.image_id;
  create_args = claim.create_args;
  if (claim.launcher_pid > 0 && !m_spec->tty && stdin_may_pass(m_spec->stdio.in)) {
    m_spec->launcher_pid = claim.launcher_pid;
    m_spec->launcher_token = claim.launcher_token;
    call = {build_launch_arguments(policy, *m_spec), std::nullopt};
  } else {  // a TTY, or a stdin only exec relays
    call = {build_exec_arguments(policy, *m_spec), std::nullopt};
  }
}

void RunContext::go_cold() {
  m_spec->run_id = m_cold_run_id;
  m_spec->warm = false;
  m_spec->image_id.clear();
  m_spec->launcher_pid = 0;
  m_spec->launcher_token.clear();
  create_args.clear();
  call = cold_call(policy, *m_spec);
  m_start_ms = wall_clock_ms();
  m_end_ms = 0;
  m_result.reset();
}

void RunContext::finish(ContainerResult result) {
  m_result = std::move(result);
  m_end_ms = wall_clock_ms();
}

void RunContext::annotate(const std::string& note) {
  if (m_result) {
    m_result->message += note;
  }
}

EngineCall cold_call(const Policy& policy, const RunSpec& spec) {
  CreateSpec create = build_create_spec(policy, spec);
  std::vector<std::string> args = cli_arguments(create, spec.dialect.is_podman());
  return {std::move(args), std::move(create)};
}

RunRecord row_at_begin(const RunContext& run) {
  RunRecord row;
  row.run_id = run.run_id();
  row.start_ms = run.start_ms();
  row.status = RunStatus::running;
  describe_caller(row, run.request());
  row.cwd = run.cwd.string();
  row.workspace = run.workspace.string();
  if (run.described()) {
    describe_container(row, run);
  }
  return row;
}

RunRecord row_at_completion(const RunContext& run) {
  RunRecord row = row_at_begin(run);
  row.end_ms = run.end_ms();
  if (run.result()) {
    describe_outcome(row, *run.result());
  }
  return row;
}

ContainerResult refused_result(RunStatus status, const std::string& message) {
  ContainerResult result;
  result.status = status;
  result.exit_code = exit_code::k_sandbox_error;
  result.message = message;
  return result;
}

}  // namespace sandshim::shim
