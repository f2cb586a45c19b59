#include "shim/sandbox.hpp"

#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "audit/store.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "shim/caller.hpp"
#include "shim/container_run.hpp"
#include "shim/enforcement.hpp"
#include "shim/engine.hpp"
#include "shim/environment.hpp"
#include "shim/hardening.hpp"
#include "shim/pool.hpp"
#include "shim/workspace.hpp"

extern char** environ;

namespace sandshim::shim {

namespace fs = std::filesystem;
using audit::RunRecord;
using audit::RunStatus;

namespace {

// A refusal: the run is recorded with this status and nothing starts.
class Refusal : public Fatal {
 public:
  Refusal(RunStatus status, const std::string& message) : Fatal(message), m_status(status) {}
  RunStatus status() const { return m_status; }

 private:
  RunStatus m_status;
};

// Once a run's row exists, INT, TERM, HUP and QUIT are held back until the row is complete: the
// run loop reads them while the container lives, and one that comes after is delivered only
// once the outcome is recorded, so the shim still ends by it (128+N) without losing the row.
class DeferredSignals {
 public:
  DeferredSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      sigaddset(&set, sig);
    }
    ::sigprocmask(SIG_BLOCK, &set, &m_previous);
  }
  DeferredSignals(const DeferredSignals&) = delete;
  DeferredSignals& operator=(const DeferredSignals&) = delete;
  ~DeferredSignals() { ::sigprocmask(SIG_SETMASK, &m_previous, nullptr); }

 private:
  sigset_t m_previous{};
};

// The audit database failed while the run was being recorded, with audit.required: the run is
// refused without asking the store that just failed to record the refusal too.
class AuditUnavailable : public Fatal {
 public:
  using Fatal::Fatal;
};

std::vector<std::string> host_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    env.emplace_back(*entry);
  }
  return env;
}

fs::path current_directory() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (ec) {
    throw Refusal(RunStatus::refused, "cannot determine the current directory (" + ec.message() +
                                          "); cd into your project first");
  }
  return fs::weakly_canonical(cwd, ec);
}

RunRecord initial_record(const Invocation& invocation, const Caller& caller) {
  RunRecord record;
  record.run_id = new_run_id();
  record.start_ms = wall_clock_ms();
  record.invoked_as = invocation.invoked_as;
  record.argv = invocation.command;
  record.uid = caller.uid;
  record.host = caller.host;
  record.pid = caller.pid;
  record.ppid = caller.ppid;
  record.parent_name = caller.parent_name;
  record.agent = caller.agent;
  record.agent_session = caller.agent_session;
  record.tool_use_id = caller.tool_use_id;
  record.status = RunStatus::running;
  return record;
}

std::string container_user(const Policy& policy, const Caller& caller, uid_t& uid, gid_t& gid) {
  if (policy.user != "auto") {
    size_t colon = policy.user.find(':');
    uid = static_cast<uid_t>(std::stoul(policy.user.substr(0, colon)));
    gid = static_cast<gid_t>(std::stoul(policy.user.substr(colon + 1)));
  } else if (caller.uid == 0) {
    uid = 65534;  // nobody: root on the host is never root in the sandbox
    gid = 65534;
  } else {
    uid = caller.uid;
    gid = caller.gid;
  }
  return std::to_string(uid) + ":" + std::to_string(gid);
}

std::string image_for(const Policy& policy, const Invocation& invocation) {
  std::string name = fs::path(invocation.command.front()).filename().string();
  auto it = policy.images.find(name);
  if (it == policy.images.end()) {
    throw Refusal(RunStatus::refused,
                  "no image is configured for " + quoted(name) + ": pass --image, or add `images." +
                      name + " = IMAGE` to ~/.config/sandshim/config (see `sandshim images`)");
  }
  return it->second;
}

void refuse_paths_outside(const RunSpec& spec) {
  auto outside = arguments_outside_workspace(spec.command, spec.cwd, spec.workspace);
  if (!outside.empty()) {
    std::vector<std::string> names;
    for (const auto& path : outside) {
      names.push_back(quoted(path));
    }
    throw Refusal(RunStatus::refused,
                  join(names, ", ") + (outside.size() == 1 ? " is" : " are") +
                      " outside the workspace " + quoted(spec.workspace.string()) +
                      " and not visible in the sandbox; copy it into the workspace");
  }
}

RunSpec prepare_spec(const Invocation& invocation, const Policy& policy, const Caller& caller,
                     const RunRecord& record, const fs::path& cwd, const fs::path& workspace) {
  RunSpec spec;
  spec.run_id = record.run_id;
  spec.invoked_as = invocation.invoked_as;
  spec.command = invocation.command;
  spec.cwd = cwd;
  spec.workspace = workspace;
  spec.image = image_for(policy, invocation);
  spec.env = sandbox_environment(host_environment(), policy);
  uid_t uid = 0;
  gid_t gid = 0;
  spec.user = container_user(policy, caller, uid, gid);
  spec.tty = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
  spec.deadline_epoch_s = (record.start_ms + policy.timeout_ms) / 1000 + 1;
  require_readable_by(workspace, uid, gid);
  refuse_paths_outside(spec);
  return spec;
}

void describe_run(RunRecord& record, const Policy& policy, const RunSpec& spec,
                  const Engine& engine, const std::vector<std::string>& args) {
  record.cwd = spec.cwd.string();
  record.workspace = spec.workspace.string();
  record.engine = engine.describe();
  record.image = spec.image;
  record.container_name = spec.container_name();
  record.engine_args = args;
  record.policy_digest = policy.digest();
  record.policy_sources = policy.sources;
  record.limits = policy.limits_summary();
  record.env_names.clear();
  for (const auto& entry : spec.env) {
    record.env_names.push_back(entry.first);
  }
}

void finish_record(RunRecord& record, const ContainerResult& result) {
  record.end_ms = wall_clock_ms();
  record.status = result.status;
  record.exit_code = result.exit_code;
  record.signal = result.signal;
  record.message = result.message;
  record.stdout_bytes = result.stdout_bytes;
  record.stderr_bytes = result.stderr_bytes;
  record.stdout_tail = result.stdout_tail;
  record.stderr_tail = result.stderr_tail;
  record.image_digest = result.image_id;
}

void say(const std::string& line) {
  std::cerr << "sandshim: " << line << std::endl;
}

// The audit keeps a row whenever it can, refused runs included; if even that fails, say so.
void record_refusal(audit::Store* store, RunRecord& record, RunStatus status,
                    const std::string& message) {
  record.end_ms = wall_clock_ms();
  record.status = status;
  record.exit_code = exit_code::k_sandbox_error;
  record.message = message;
  if (store == nullptr) {
    return;
  }
  try {
    store->record_finished(record);
  } catch (const Fatal& e) {
    say(std::string("could not record the refusal: ") + e.what());
  }
}

std::unique_ptr<audit::Store> open_store(const fs::path& path, bool required) {
  try {
    return std::make_unique<audit::Store>(audit::Store::open({path}));
  } catch (const Fatal& e) {
    if (required) {
      throw Fatal(std::string(e.what()) + "; nothing ran (audit.required = true)");
    }
    say(std::string("warning: running without audit: ") + e.what());
    return nullptr;
  }
}

// Loading the policy can fail before the configured database is known: record the refusal in
// the database the environment or the default names.
std::unique_ptr<audit::Store> fallback_store() {
  try {
    return std::make_unique<audit::Store>(audit::Store::open({Policy{}.effective_audit_db()}));
  } catch (const Fatal&) {
    return nullptr;
  }
}

// Step one of the row, before anything starts. When it fails the run is refused (one line), or
// with audit.required = false runs unrecorded after a warning; returns the store to complete.
audit::Store* begin_record(audit::Store* store, const RunRecord& record, bool required) {
  if (store == nullptr) {
    return nullptr;
  }
  try {
    store->begin_run(record);
    return store;
  } catch (const Fatal& e) {
    if (required) {
      throw AuditUnavailable(std::string(e.what()) + "; nothing ran (audit.required = true)");
    }
    say(std::string("warning: running without audit: ") + e.what());
    return nullptr;
  }
}

// The command has run: a failure to complete its row is reported, never turned into a refusal.
void complete_record(audit::Store* store, const RunRecord& record) {
  if (store == nullptr) {
    return;
  }
  try {
    store->complete_run(record);
  } catch (const Fatal& e) {
    say(std::string("could not complete the audit row of run ") + record.run_id + ": " + e.what());
  }
}

// The engine's own error, as one refusal line without the trailing "nothing ran" the refusal
// path adds.
std::string engine_info_failure(const std::string& engine_output, const RunSpec& spec) {
  std::string message = describe_engine_error(engine_output, spec);
  const std::string suffix = "; nothing ran";
  if (message.ends_with(suffix)) {
    message.resize(message.size() - suffix.size());
  }
  return message;
}

// Before the container starts: the engine must really enforce the limits (rootless engines on
// cgroup v1 accept and drop them), unless the policy accepts that. The audit row's limits say
// which were in force.
void require_enforced_limits(const Policy& policy, const Engine& engine, const RunSpec& spec,
                             RunRecord& record) {
  EngineFacts facts;
  try {
    facts = engine_facts(engine, default_facts_cache());
  } catch (const EngineInfoError& e) {
    throw Refusal(RunStatus::engine_error, engine_info_failure(e.what(), spec));
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::engine_error, e.what());
  }
  Enforcement enforcement = assess_enforcement(facts);
  record.limits += " " + describe_enforcement(enforcement);
  if (!enforcement.unenforced.empty() && policy.limits_unenforced != Unenforced::accept) {
    throw Refusal(RunStatus::refused, refusal_message(facts, enforcement));
  }
  if (!enforcement.unenforced.empty()) {
    say("warning: running without the " + join(enforcement.unenforced, ", ") +
        " limits (limits.unenforced = accept): " + enforcement.reason);
  }
}

// The run takes over a claimed warm container: its id and name, and an exec instead of a run.
// The audit keeps how the container was started and the exec, in that order.
std::vector<std::string> become_warm(RunSpec& spec, RunRecord& record, const PoolClaim& claim,
                                     const Policy& policy) {
  spec.run_id = claim.run_id;
  spec.warm = true;
  spec.image_id = claim.image_id;
  record.run_id = claim.run_id;
  record.warm = true;
  return build_exec_arguments(policy, spec);
}

// Resolves the workspace, the spec and the engine of a run, refusing what may not run.
RunSpec spec_for(const Invocation& invocation, const Policy& policy, const Caller& caller,
                 RunRecord& record) {
  fs::path cwd = current_directory();
  record.cwd = cwd.string();
  fs::path workspace = resolve_workspace(cwd, home_directory());
  record.workspace = workspace.string();
  return prepare_spec(invocation, policy, caller, record, cwd, workspace);
}

Engine engine_for(const Policy& policy) {
  try {
    return locate_engine(policy);
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::engine_error, e.what());
  }
}

// Starts the row, runs the container, fills the row in; the command's outcome. `store` becomes
// null when the audit failed and the policy lets the run go on without it.
ContainerResult execute(const Engine& engine, const std::vector<std::string>& args,
                        const RunSpec& spec, const Policy& policy, RunRecord& record,
                        audit::Store*& store) {
  store = begin_record(store, record, policy.audit_required);
  ContainerResult result = run_container(engine, args, spec, policy);
  finish_record(record, result);
  return result;
}

int run_in_container(const Invocation& invocation, const Policy& policy, const Caller& caller,
                     RunRecord& record, audit::Store* store) {
  RunSpec spec = spec_for(invocation, policy, caller, record);
  Engine engine = engine_for(policy);
  spec.dialect = engine.dialect;
  auto args = build_run_arguments(policy, spec);
  describe_run(record, policy, spec, engine, args);
  if (invocation.dry_run) {
    std::vector<std::string> line = {engine.client.string()};
    line.insert(line.end(), args.begin(), args.end());
    std::cout << shell_join(line) << std::endl;
    return exit_code::k_ok;
  }
  require_enforced_limits(policy, engine, spec, record);
  const RunSpec cold_spec = spec;
  const RunRecord cold_record = record;
  const auto cold_args = args;
  std::optional<WarmPool> pool;
  if (policy.pool_size > 0) {
    pool.emplace(engine, policy, spec);
    if (auto claim = pool->claim()) {
      args = become_warm(spec, record, *claim, policy);
      std::string limits = record.limits;  // with what the engine enforces
      describe_run(record, policy, spec, engine, claim->create_args);
      record.limits = limits;
      record.engine_args.insert(record.engine_args.end(), args.begin(), args.end());
    }
  }
  DeferredSignals deferred;  // from the row's start to its completion
  ContainerResult result = execute(engine, args, spec, policy, record, store);
  const std::string claimed = spec.warm ? spec.run_id : "";
  if (spec.warm && result.status == RunStatus::engine_error) {
    // Nothing ran in the warm container (it was removed meanwhile): its row says so, and the
    // command runs cold under its own row.
    record.message += "; ran cold as run " + cold_record.run_id;
    complete_record(store, record);
    spec = cold_spec;
    record = cold_record;
    record.start_ms = wall_clock_ms();
    result = execute(engine, cold_args, spec, policy, record, store);
  }
  if (pool) {
    pool->refill_detached(claimed);
  }
  if (!result.message.empty()) {
    say(result.message);
  }
  complete_record(store, record);
  return result.exit_code;
}

}  // namespace

int fill_pool(const Invocation& invocation) {
  Caller caller = identify_caller();
  RunRecord record = initial_record(invocation, caller);
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  Policy policy = load_policy({(ec ? std::nullopt : find_git_root(cwd)).value_or(cwd), {}});
  if (policy.pool_size == 0) {
    throw Fatal("pool.size is 0 in this policy (warm mode is off): set it in a config file",
                exit_code::k_usage);
  }
  RunSpec spec = spec_for(invocation, policy, caller, record);
  Engine engine = engine_for(policy);
  spec.dialect = engine.dialect;
  WarmPool pool(engine, policy, spec);
  int started = pool.refill();
  std::cout << "started " << started << " warm container(s) for " << spec.image << " in "
            << spec.workspace.string() << " (pool " << pool.key() << ")\n";
  return exit_code::k_ok;
}

int run_sandboxed(const Invocation& invocation) {
  Caller caller = identify_caller();
  RunRecord record = initial_record(invocation, caller);
  Policy policy;
  try {
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    auto root = ec ? std::nullopt : find_git_root(cwd);
    policy = load_policy({root.value_or(cwd), invocation.overrides});
  } catch (const Fatal& e) {
    auto store = invocation.dry_run ? nullptr : fallback_store();
    record_refusal(store.get(), record, RunStatus::refused, e.what());
    say(std::string(e.what()) + "; nothing ran");
    return exit_code::k_sandbox_error;
  }
  std::unique_ptr<audit::Store> store;
  if (!invocation.dry_run) {
    store = open_store(policy.effective_audit_db(), policy.audit_required);
  }
  try {
    return run_in_container(invocation, policy, caller, record, store.get());
  } catch (const AuditUnavailable& e) {
    say(e.what());
    return e.code();
  } catch (const Refusal& e) {
    record_refusal(store.get(), record, e.status(), e.what());
    say(std::string(e.what()) + "; nothing ran");
    return e.code();
  } catch (const Fatal& e) {
    record_refusal(store.get(), record, RunStatus::refused, e.what());
    say(std::string(e.what()) + "; nothing ran");
    return e.code();
  }
}

}  // namespace sandshim::shim
