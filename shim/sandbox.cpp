#include "shim/sandbox.hpp"

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
  if (!enforcement.unenforced.empty() && policy.limits_unenforced != "accept") {
    throw Refusal(RunStatus::refused, refusal_message(facts, enforcement));
  }
  if (!enforcement.unenforced.empty()) {
    say("warning: running without the " + join(enforcement.unenforced, ", ") +
        " limits (limits.unenforced = accept): " + enforcement.reason);
  }
}

int run_in_container(const Invocation& invocation, const Policy& policy, const Caller& caller,
                     RunRecord& record, audit::Store* store) {
  fs::path cwd = current_directory();
  record.cwd = cwd.string();
  fs::path workspace = resolve_workspace(cwd, home_directory());
  record.workspace = workspace.string();
  RunSpec spec = prepare_spec(invocation, policy, caller, record, cwd, workspace);
  Engine engine = [&] {
    try {
      return locate_engine(policy);
    } catch (const Fatal& e) {
      throw Refusal(RunStatus::engine_error, e.what());
    }
  }();
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
  if (store != nullptr) {
    store->begin_run(record);
  }
  ContainerResult result = run_container(engine, args, spec, policy);
  finish_record(record, result);
  if (!result.message.empty()) {
    say(result.message);
  }
  complete_record(store, record);
  return result.exit_code;
}

}  // namespace

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
