#include "run/sandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "audit/store.hpp"
#include "common/changed_files.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/semver.hpp"
#include "common/strings.hpp"
#include "engine/endpoint.hpp"
#include "engine/enforcement.hpp"
#include "engine/engine.hpp"
#include "engine/engine_api.hpp"
#include "engine/image_host.hpp"
#include "engine/seccomp.hpp"
#include "policy/engine_list.hpp"
#include "policy/environment.hpp"
#include "policy/limit_hints.hpp"
#include "policy/masks.hpp"
#include "policy/reach.hpp"
#include "policy/workspace.hpp"
#include "run/container_run.hpp"
#include "run/cpu_share.hpp"
#include "run/egress_session.hpp"
#include "run/guardian.hpp"
#include "run/hardening.hpp"
#include "run/interpreter_fit.hpp"
#include "run/one_stream.hpp"
#include "run/run_context.hpp"
#include "run/step_timer.hpp"
#include "run/workspace_gate.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;
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

// One line to the caller's stderr.
void say(const RunRequest& request, const std::string& line) {
  std::string text = "sandshim: " + line + "\n";
  if (request.stdio.err == STDERR_FILENO) {
    std::cerr << text << std::flush;
    return;
  }
  ssize_t ignored = ::write(request.stdio.err, text.data(), text.size());
  (void)ignored;
}

// The directory whose .sandshim.conf applies: the git root of the caller's cwd, else the cwd.
fs::path policy_root(const RunRequest& request) {
  if (request.cwd.empty()) {
    return {};
  }
  return find_git_root(request.cwd).value_or(request.cwd);
}

// The first remote engine of engine.endpoints a run could be placed on (one carrying
// engine.require_labels).
std::optional<std::string> remote_candidate(const Policy& policy) {
  for (const auto& entry : policy.endpoints) {
    if (!engine::is_local_endpoint(entry.endpoint) &&
        carries_labels(entry, policy.require_labels)) {
      return entry.endpoint;
    }
  }
  return std::nullopt;
}

// Whether the policy may place a run on a remote engine, where the workspace travels as a
// read-only snapshot (an explicit rw is refused there; `wrap` stays read-only).
bool may_place_remotely(const Policy& policy) {
  return !engine::is_local_endpoint(policy.endpoint) || remote_candidate(policy).has_value();
}

}  // namespace

bool wrap_shell_writes(const Policy& policy) {
  return workspace_for_run(policy.workspace_mode, !may_place_remotely(policy)) == WorkspaceMode::rw;
}

namespace {

// The caller's layered policy with the workspace mount this run gets (wrap resolved).
Policy policy_for_run(const RunRequest& request) {
  Policy policy =
      load_policy(policy_inputs(request.broker, policy_root(request), request.overrides));
  policy.workspace_mode =
      workspace_for_run(policy.workspace_mode, request.wrap_shell && !may_place_remotely(policy));
  return policy;
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

// Through a broker a run of the caller's own uid (sandbox.user = auto) has the broker's group as
// its primary group and the caller's as a supplementary one: it reads and writes what the caller
// may, and what it makes is the caller's, but the kernel lets a process trace only one whose
// real, effective and saved gids are all its own, so the caller's processes on the host cannot
// ptrace it, nor open its /proc/PID/mem, environ or root, nor through it reach the broker's git
// stage. A broker running as root keeps the caller's group (root's group opens too much).
void keep_caller_from_tracing(RunSpec& spec, const RunRequest& request, uid_t uid, gid_t gid) {
  gid_t broker_group = ::getegid();
  if (!request.broker || uid != request.caller.uid || uid == 0 || broker_group == 0 ||
      broker_group == gid) {
    return;
  }
  spec.user = std::to_string(uid) + ":" + std::to_string(broker_group);
  spec.supplementary_gids = {gid};
}

std::string image_for(const Policy& policy, const RunRequest& request) {
  std::string name = fs::path(request.command.front()).filename().string();
  auto it = policy.images.find(name);
  if (it == policy.images.end()) {
    throw Refusal(RunStatus::refused,
                  "no image is configured for " + quoted(name) + ": pass --image, or add `images." +
                      name + " = IMAGE` to ~/.config/sandshim/config (see `sandshim images`)");
  }
  return it->second;
}

// PYTHONUSERBASE as the caller has it, else ~/.local: where `pip install --user` put a tool.
fs::path user_base_of(const RunRequest& request) {
  auto base = request.env_value("PYTHONUSERBASE");
  if (base && base->starts_with('/')) {
    return *base;
  }
  return request.home.empty() ? fs::path() : request.home / ".local";
}

// `/usr/bin/python3 ~/.local/bin/meson setup build`: the script, and a user-installed tool's
// packages, read-only beside the host's toolchain. The interpreter named by path is the one
// that runs; by name, the one the lookup found.
void add_host_script(RunSpec& spec, const RunContext& run, const fs::path& found) {
  const RunRequest& request = run.request();
  fs::path named = request.command.front();
  std::optional<HostScript> script =
      host_script_of(request.command, named.is_absolute() ? named : found, run.cwd, run.workspace,
                     user_base_of(request));
  if (script) {
    spec.host_mounts.insert(spec.host_mounts.end(), script->mounts.begin(), script->mounts.end());
    spec.host_environment = std::move(script->environment);
  }
}

// images.NAME = host: the empty base with the host's /usr, a curated /etc and the interpreter's
// prefix read-only; refused with one line when the host's interpreter cannot be found or mounted.
void use_host_toolchain(RunSpec& spec, const RunContext& run) {
  const RunRequest& request = run.request();
  std::string name = fs::path(request.command.front()).filename().string();
  try {
    HostLookup lookup =
        host_lookup_for(name, request.environment, run.cwd, request.home,
                        run.policy.effective_shim_dir(), request.broker.has_value());
    if (!request.broker) {  // a venv by path is the caller's choice of interpreter
      lookup.venv_python = venv_python_of(request.command.front(), run.cwd).value_or("");
      lookup.workspace = run.workspace;
    }
    HostToolchain toolchain = resolve_host_toolchain(lookup);
    spec.image = std::string(k_host_base_image);
    spec.host_mounts = std::move(toolchain.mounts);
    spec.host_path = std::move(toolchain.inside_path);
    if (!request.broker) {  // a script of the caller's outside the workspace, by path
      add_host_script(spec, run, toolchain.interpreter);
    }
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::refused, "images." + name + " = host: " + e.what() +
                                          "; install it on the host or map an image with `images." +
                                          name + " = IMAGE`");
  }
}

// What the project asks of the interpreter: read here in direct mode; through a broker, which
// opens no file the caller names, what the caller's client read and sent.
std::optional<VersionAsk> version_ask_of(const RunContext& run) {
  const RunRequest& request = run.request();
  if (request.broker) {
    return request.version_ask;
  }
  return project_version_ask(request.command.front(), run.cwd, run.workspace);
}

// What the project asks of the interpreter against what the image has, as one line, or "" when
// it fits or either is unknown.
std::string interpreter_mismatch(const std::string& interpreter, const std::string& image,
                                 const RunContext& run) {
  std::optional<VersionAsk> ask = version_ask_of(run);
  std::optional<std::string> have = image_interpreter_version(image, interpreter);
  if (!ask || !have || ask_satisfied(*have, *ask).value_or(true)) {
    return "";
  }
  return ask->source + " asks for " + interpreter + " " + quoted(ask->range) + " and " + image +
         " has " + interpreter + " " + *have;
}

// The way to the host's interpreter a `warn` names: the caller's own config in direct mode, the
// broker's system file through a broker (images.* and version_fit are trusted keys).
std::string host_interpreter_fix(const RunRequest& request, const std::string& interpreter) {
  std::string name = fs::path(request.command.front()).filename().string();
  if (request.broker) {
    return "`sandbox.version_fit = host` in the broker's " + request.broker->system_file.string() +
           " runs the host's " + interpreter + " in the sandbox instead";
  }
  return "`images." + name + " = host` runs the host's " + interpreter + " in the sandbox instead";
}

// sandbox.version_fit: a project that asks for a node or python its image lacks runs the host's
// instead, read-only in the same sandbox (host), or is told (warn): a mismatch is one line
// before the run, never a crash inside it. Through a broker the broker's system file decides,
// on the ask the caller's client sent.
void fit_interpreter(RunSpec& spec, const RunContext& run) {
  const RunRequest& request = run.request();
  std::string interpreter = fitted_interpreter(request.command.front());
  if (interpreter.empty() || run.policy.version_fit == VersionFit::off) {
    return;
  }
  std::string mismatch = interpreter_mismatch(interpreter, spec.image, run);
  if (mismatch.empty()) {
    return;
  }
  if (run.policy.version_fit == VersionFit::warn) {
    say(request, mismatch + ": the run may fail; " + host_interpreter_fix(request, interpreter));
    return;
  }
  try {
    use_host_toolchain(spec, run);
    std::string keep = request.broker ? "the broker's `sandbox.version_fit` chose it"
                                      : "`sandbox.version_fit = warn` keeps the image";
    say(request, mismatch + ": this run uses the host's " + interpreter +
                     ", read-only in the sandbox (" + keep + ")");
  } catch (const Refusal& refusal) {
    say(request, mismatch + ", and the host's cannot run instead (" + refusal.what() +
                     "): the run keeps the image");
  }
}

void refuse_paths_outside(const RunSpec& spec) {
  auto outside =
      arguments_outside_workspace(spec.command, spec.cwd, spec.workspace, spec.host_mounts);
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

// The caller's cwd and the workspace around it, refusing a run from nowhere or from home.
void resolve_place(RunContext& run) {
  const RunRequest& request = run.request();
  if (request.cwd.empty()) {
    throw Refusal(RunStatus::refused, "cannot determine the current directory (" +
                                          request.cwd_error + "); cd into your project first");
  }
  run.cwd = request.cwd;
  run.workspace = resolve_workspace(run.cwd, request.home);
}

// sandbox.hide: what the globs match in the workspace is masked; past a limit, refused.
void hide_secrets(RunSpec& spec, const Policy& policy) {
  try {
    spec.masks = plan_masks(spec.workspace, effective_hide_globs(policy.hide, policy.unhide),
                            policy.hide_limit);
    if (!spec.masks.paths.empty()) {
      spec.mask_sources = ensure_mask_sources();
    }
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::refused, e.what());
  }
}

// The workspace as the run's binds are checked against it: through a broker the caller's held
// directory (the worker's cwd, which its user may reach only through the descriptor), else by
// name.
UniqueFd workspace_for_binds(const RunSpec& spec, bool held) {
  if (held) {
    return open_held_workspace(spec.workspace, spec.cwd);
  }
  UniqueFd workspace(::open(spec.workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!workspace.valid()) {
    throw Fatal("cannot open the workspace " + quoted(spec.workspace.string()) + ": " +
                std::strerror(errno));
  }
  return workspace;
}

// Under rw git's writes go through a stage (run/git_stage.hpp) instead of a read-only .git. A
// broker's stage is its own, filled beneath the caller's held workspace, and its user never
// writes the caller's .git: the client carries the run's changes as the caller. .git stays
// read-only while another run holds the stage.
void stage_git(RunSpec& spec, std::vector<BindPath>& kept, const RunRequest& request,
               int workspace_fd, uid_t uid, gid_t gid) {
  if (request.broker) {
    spec.git_stage = GitStage::open_for_broker(workspace_fd, spec.workspace, request.caller.uid);
  } else {
    spec.git_stage = GitStage::open(spec.workspace, uid, gid);
  }
  if (!spec.git_stage) {
    return;
  }
  std::erase_if(kept, [&](const BindPath& bind) { return bind.target == spec.workspace / ".git"; });
  kept.insert(kept.end(), spec.git_stage->binds().begin(), spec.git_stage->binds().end());
  bool configured = std::any_of(spec.env.begin(), spec.env.end(), [](const auto& entry) {
    return entry.first == "GIT_CONFIG_COUNT";
  });
  if (!configured) {
    auto git_env = spec.git_stage->environment(request.broker ? request.git_identity
                                                              : global_git_identity(request.home));
    spec.env.insert(spec.env.end(), git_env.begin(), git_env.end());
  }
}

// A broker's run under rw has no bind of the caller's files at a name inside the workspace (where
// a link swapped in while the engine mounts would move it, over the gate too): the protected names
// are the broker's copies, .git is its stage, whose directories are bound at a fixed place, and
// sandbox.writable is not needed. Without a stage (another run of the workspace holds it, or .git
// is not the caller's alone) .git could not stay read-only that way: the workspace is read-only
// in this run, said in one line.
bool keep_protected_for_broker(RunSpec& spec, RunContext& run) {
  const RunRequest& request = run.request();
  UniqueFd workspace = workspace_for_binds(spec, true);
  spec.protected_copies =
      ProtectedCopies::make(workspace.get(), spec.workspace, request.caller.uid, run.cold_run_id());
  std::vector<BindPath> kept = spec.protected_copies->binds();
  stage_git(spec, kept, request, workspace.get(), 0, 0);
  struct stat st {};
  bool git_to_stage = ::fstatat(workspace.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                      !S_ISREG(st.st_mode);  // a worktree's .git file is among the copies
  if (git_to_stage && !spec.git_stage) {
    say(request,
        "sandbox.workspace = rw: .git cannot be staged for this run (another run of this "
        "workspace holds its stage, or .git is a link, holds one or someone else's file); the "
        "workspace is read-only in this run");
    run.policy.workspace_mode = WorkspaceMode::ro;
    spec.protected_copies.reset();
    return false;
  }
  spec.writable_mounts = std::move(kept);
  spec.absent_protected = absent_protected_names(workspace.get());
  spec.protected_links = protected_links(workspace.get());
  return true;
}

// sandbox.workspace = rw, sandbox.writable and sandbox.cache: the only places a run may write
// that outlive it. Under rw the protected names (agent settings, hooks, git's config and hooks)
// stay read-only.
void grant_writes(RunSpec& spec, RunContext& run, uid_t uid, gid_t gid) {
  const Policy& policy = run.policy;  // a broker's rw may turn ro here
  const RunRequest& request = run.request();
  try {
    bool placed = request.broker && policy.workspace_mode == WorkspaceMode::rw &&
                  keep_protected_for_broker(spec, run);
    if (!placed && (!policy.writable.empty() || policy.workspace_mode == WorkspaceMode::rw)) {
      UniqueFd workspace = workspace_for_binds(spec, request.broker.has_value());
      spec.writable_mounts = writable_binds(spec.workspace, workspace.get(), policy.writable);
      if (policy.workspace_mode == WorkspaceMode::rw) {  // direct mode's: binds by name
        std::vector<BindPath> kept = protected_binds(spec.workspace, workspace.get());
        stage_git(spec, kept, request, workspace.get(), uid, gid);
        spec.writable_mounts.insert(spec.writable_mounts.end(), kept.begin(), kept.end());
        spec.absent_protected = absent_protected_names(workspace.get());
        spec.protected_links = protected_links(workspace.get());
      }
    }
    if (policy.cache == Cache::on) {
      bool emptied = false;
      spec.cache_dir = prepare_cache_dir(spec.workspace, uid, gid, policy.cache_bytes, emptied);
      if (emptied) {
        spdlog::info("sandbox.cache: emptied {} (past sandbox.cache_size)",
                     spec.cache_dir.string());
      }
    }
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::refused, e.what());
  }
}

// The binds inside the workspace (sandbox.workspace = rw's read-only names, sandbox.writable)
// are mounted by name, and the engine follows a link wherever it leads with root's rights: each
// must lead to something the workspace holds, and through a broker the gate checks each again
// inside the container (a name swapped after this check).
void check_binds_beneath(RunSpec& spec) {
  if (spec.writable_mounts.empty()) {
    return;
  }
  // A bind inside the workspace whose source is elsewhere follows a link at its target to
  // anywhere in the container, over the gate too, so what it brings must be no one's but the
  // broker's: a broker's run has only its git stage's and its copies (the gate checks each is
  // where it belongs).
  const fs::path stage = spec.git_stage ? spec.git_stage->dir() : fs::path();
  const fs::path copies = spec.protected_copies ? spec.protected_copies->dir() : fs::path();
  if (spec.gate && std::any_of(spec.writable_mounts.begin(), spec.writable_mounts.end(),
                               [&](const BindPath& bind) {
                                 bool brokers = bind.source == stage ||
                                                (!copies.empty() && is_within(bind.source, copies));
                                 return bind.source != bind.target && !brokers &&
                                        is_within(bind.target, spec.workspace);
                               })) {
    throw Fatal(
        "internal error: a bind inside the workspace comes from elsewhere in a broker's "
        "run; nothing ran");
  }
  try {
    UniqueFd workspace = workspace_for_binds(spec, spec.gate.has_value());
    auto found = binds_beneath(workspace.get(), spec.workspace, spec.writable_mounts);
    if (spec.gate) {
      if (!stage.empty()) {
        found.insert(found.begin(), {spec.workspace / ".git", spec.git_stage->identity()});
      }
      if (spec.protected_copies) {
        const auto& copied = spec.protected_copies->identities();
        found.insert(found.end(), copied.begin(), copied.end());
      }
      spec.gate->binds = std::move(found);
    }
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::refused, e.what());
  }
}

// The caller's variables the policy passes, less those whose values hold URL credentials (named
// to the caller, never their values).
std::vector<std::pair<std::string, std::string>> sandbox_environment(const RunRequest& request,
                                                                     const Policy& policy) {
  FilteredEnvironment environment = filter_environment(request.environment, policy);
  if (!environment.refused_credentials.empty()) {
    say(request, "not passed into the sandbox, their values hold URL credentials: " +
                     join(environment.refused_credentials, ", "));
  }
  return std::move(environment.entries);
}

// What to run, where and as whom, from the request and the policy; refuses what may not run.
RunSpec prepare_spec(RunContext& run) {
  const RunRequest& request = run.request();
  RunSpec spec;
  spec.invoked_as = request.invoked_as;
  spec.command = request.command;
  spec.cwd = run.cwd;
  spec.workspace = run.workspace;
  spec.image = image_for(run.policy, request);
  if (is_host_mode(spec.image)) {
    use_host_toolchain(spec, run);
  } else {
    fit_interpreter(spec, run);
  }
  spec.env = sandbox_environment(request, run.policy);
  uid_t uid = 0;
  gid_t gid = 0;
  spec.user = container_user(run.policy, request.caller, uid, gid);
  if (run.policy.user == "auto") {
    keep_caller_from_tracing(spec, request, uid, gid);
  }
  spec.tty = request.tty;
  spec.stdio = request.stdio;
  spec.one_stream = !spec.tty && same_open_file(spec.stdio.out, spec.stdio.err);
  spec.deadline_epoch_s = (run.start_ms() + run.policy.timeout_ms) / 1000 + 1;
  spec.egress = egress_mount_for(run.policy, run.cold_run_id());
  require_readable_by(run.workspace, uid, gid);
  refuse_paths_outside(spec);
  hide_secrets(spec, run.policy);
  grant_writes(spec, run, uid, gid);
  if (request.broker) {
    spec.gate = gate_for_held_cwd(spec.workspace, spec.cwd);
  }
  check_binds_beneath(spec);
  return spec;
}

// The audit keeps a row whenever it can, refused runs included; if even that fails, say so.
void record_refusal(RunContext& run, RunStatus status, const std::string& message) {
  run.finish(refused_result(status, message));
  if (run.store == nullptr) {
    return;
  }
  try {
    run.store->record_finished(row_at_completion(run));
  } catch (const Fatal& e) {
    say(run.request(), std::string("could not record the refusal: ") + e.what());
  }
}

std::unique_ptr<audit::Store> open_store(const RunRequest& request, const Policy& policy) {
  try {
    audit::StoreOptions options =
        audit_store_options(policy, policy.effective_audit_db(), request.broker.has_value());
    if (auto opened = take_preopened_store(request, options)) {
      return opened;
    }
    return std::make_unique<audit::Store>(audit::Store::open(options));
  } catch (const Fatal& e) {
    if (policy.audit_required) {
      throw Fatal(std::string(e.what()) + "; nothing ran (audit.required = true)");
    }
    say(request, std::string("warning: running without audit: ") + e.what());
    return nullptr;
  }
}

// Loading the policy can fail before the configured database is known: record the refusal in
// the database the environment or the default names; a broker's in the one its system file names.
std::unique_ptr<audit::Store> fallback_store(const RunRequest& request) {
  try {
    if (request.broker) {
      BrokerPolicySource system_only{request.broker->system_file, {}, {}};
      Policy floor = load_policy(policy_inputs(system_only, {}));
      return std::make_unique<audit::Store>(
          audit::Store::open(audit_store_options(floor, floor.effective_audit_db(), true)));
    }
    return std::make_unique<audit::Store>(audit::Store::open({Policy{}.effective_audit_db()}));
  } catch (const Fatal&) {
    return nullptr;
  }
}

// Step one of the row, before anything starts. When it fails the run is refused (one line), or
// with audit.required = false runs unrecorded after a warning.
void begin_row(RunContext& run) {
  if (run.store == nullptr) {
    return;
  }
  try {
    run.store->begin_run(row_at_begin(run));
  } catch (const Fatal& e) {
    if (run.policy.audit_required) {
      throw AuditUnavailable(std::string(e.what()) + "; nothing ran (audit.required = true)");
    }
    say(run.request(), std::string("warning: running without audit: ") + e.what());
    run.store.reset();
  }
}

// The command has run: a failure to complete its row is reported, never turned into a refusal.
void complete_row(RunContext& run) {
  if (run.store == nullptr) {
    return;
  }
  try {
    run.store->complete_run(row_at_completion(run));
  } catch (const Fatal& e) {
    say(run.request(),
        std::string("could not complete the audit row of run ") + run.run_id() + ": " + e.what());
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
void require_enforced_limits(RunContext& run, const RunEngine& engine) {
  EngineFacts facts;
  try {
    StepTimer step("engine facts");
    facts = engine.facts(*run.engine);
  } catch (const EngineInfoError& e) {
    throw Refusal(RunStatus::engine_error, engine_info_failure(e.what(), *run.spec()));
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::engine_error, e.what());
  }
  Enforcement enforcement = assess_enforcement(facts);
  run.enforcement = describe_enforcement(enforcement);
  if (!enforcement.unenforced.empty() && run.policy.limits_unenforced != Unenforced::accept) {
    throw Refusal(RunStatus::refused, refusal_message(facts, enforcement));
  }
  if (!enforcement.unenforced.empty()) {
    say(run.request(), "warning: running without the " + join(enforcement.unenforced, ", ") +
                           " limits (limits.unenforced = accept): " + enforcement.reason);
  }
}

// The remote engine whose limits a run meets: the one it was placed on, else (engine.endpoints)
// the first remote one it could have been placed on (carrying engine.require_labels), so a
// policy runs the same wherever it is placed.
std::optional<std::string> remote_subject(const Policy& policy, const Engine& engine) {
  if (!engine::is_local_endpoint(engine.endpoint)) {
    return "engine.endpoint " + quoted(engine.endpoint);
  }
  if (auto candidate = remote_candidate(policy)) {
    return "engine.endpoints' " + quoted(*candidate);
  }
  return std::nullopt;
}

// What a remote engine cannot give a run: a warm pool, a writable workspace, the egress proxy.
void refuse_remote_limits(const Policy& policy, const std::string& subject) {
  if (policy.pool_size > 0) {
    throw Refusal(RunStatus::refused, subject +
                                          ": the warm pool runs on a local engine only; set "
                                          "pool.size = 0 for a remote engine");
  }
  if (policy.workspace_mode == WorkspaceMode::rw) {
    throw Refusal(RunStatus::refused,
                  subject +
                      ": workspace = rw needs a local engine (the workspace travels as a "
                      "read-only snapshot); name the directories that should come back in "
                      "sandbox.writable");
  }
  if (policy.network == Network::allowlist) {
    throw Refusal(RunStatus::refused,
                  subject + ": sandbox.network = allowlist needs its proxy beside a local engine");
  }
}

// The run's engine (placed among engine.endpoints): local, or remote with a shipped workspace.
Engine engine_for(const Policy& policy, const RunEngine& run_engine) {
  Engine engine;
  try {
    engine = run_engine.locate(policy);
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::engine_error, e.what());
  }
  if (auto refusal = remote_mount_refusal(engine)) {
    throw Refusal(RunStatus::refused, *refusal);
  }
  if (auto subject = remote_subject(policy, engine)) {
    refuse_remote_limits(policy, *subject);
  }
  return engine;
}

// The CPUs a cpuset may take where the engine applies one (a rootless engine may lack the
// cpuset controller); else the quota alone limits the run.
std::vector<int> cpu_choices_for(const Engine& client, const RunEngine& engine) {
  try {
    return engine.facts(client).cpuset ? usable_cpus() : std::vector<int>{};
  } catch (const std::exception&) {
    return {};  // the limits check asks again and refuses in the engine's own words
  }
}

// Fewer CPUs than the host's: the container's online CPUs say so too (runc only: gVisor keeps its
// own /sys).
void narrow_cpus(RunSpec& spec, const Policy& policy, const RunEngine& engine,
                 const Engine& client) {
  if (!engine::is_local_endpoint(client.endpoint)) {
    return;  // this machine's CPUs say nothing of the engine's: the quota alone limits the run
  }
  spec.cpu_choices = cpu_choices_for(client, engine);
  size_t seen = cpus_seen(policy.cpus, spec.cpu_choices.size());
  if (seen == spec.cpu_choices.size() || policy.runtime != Runtime::runc) {
    return;
  }
  try {
    spec.cpu_online_file = online_cpus_file(seen);
  } catch (const Fatal& e) {
    throw Refusal(RunStatus::refused, e.what());
  }
}

// Resolves the workspace, the spec and the engine of a run, refusing what may not run.
void prepare(RunContext& run, const RunEngine& engine) {
  StepTimer step("prepare");
  resolve_place(run);
  RunSpec spec = prepare_spec(run);
  run.engine = engine_for(run.policy, engine);
  spec.dialect = run.engine->dialect;
  narrow_cpus(spec, run.policy, engine, *run.engine);
  bool gvisor = run.policy.runtime == Runtime::runsc;
  if (spec.dialect.is_podman() || gvisor) {
    try {
      spec.seccomp_profile = sandbox_seccomp_profile(gvisor);
    } catch (const Fatal& e) {
      throw Refusal(RunStatus::refused, e.what());
    }
  }
  run.set_spec(std::move(spec));
  run.call = cold_call(run.policy, *run.spec());
}

// The effective sandbox, once per run, for SANDSHIM_LOG=debug.
void log_sandbox(const RunContext& run) {
  spdlog::debug("run {} ({}): {} {} in {} as {}, limits {}", run.run_id(),
                run.spec()->warm ? "warm" : "cold", run.engine->describe(), run.spec()->image,
                run.workspace.string(), run.spec()->user, run.policy.limits_summary());
}

// Where a line that lifts a limit goes: the caller's own config file in direct mode; through a
// broker, whose user layers may only tighten, the broker's system file.
std::string lifting_config_file(const RunRequest& request) {
  if (request.broker) {
    return request.broker->system_file.string() + " (the broker's; an administrator's)";
  }
  auto xdg = request.env_value("XDG_CONFIG_HOME");
  fs::path base =
      xdg && !xdg->empty() && (*xdg)[0] == '/' ? fs::path(*xdg) : request.home / ".config";
  return (base / "sandshim" / "config").string();
}

// The limits the run hit, named in the result (for the audit) and returned for the caller.
std::vector<LimitHint> judge_limits(ContainerResult& result, const RunContext& run) {
  auto hints = limit_hints(result.limit_facts, run.policy, lifting_config_file(run.request()));
  result.limit_hit = limit_keys(hints);
  return hints;
}

// The protected names the run made at the workspace root: absent before it, or a link before it
// (CLAUDE.md -> AGENTS.md) replaced by something else.
std::vector<std::string> created_protected_names(const RunSpec& spec) {
  std::vector<std::string> created;
  for (const std::string& name : spec.absent_protected) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(spec.workspace / name, ec))) {
      created.push_back(name);
    }
  }
  if (spec.protected_links.empty()) {
    return created;
  }
  UniqueFd workspace(::open(spec.workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (const ProtectedLink& before : spec.protected_links) {
    std::error_code ec;
    bool there = fs::exists(fs::symlink_status(spec.workspace / before.name, ec));
    if (there && protected_link_at(workspace.get(), before.name) != before) {
      created.push_back(before.name);
    }
  }
  return created;
}

// The protected links the workspace no longer holds once the created names are set aside: one
// the run removed, or replaced (created).
std::vector<ProtectedLink> links_to_restore(const RunSpec& spec,
                                            const std::vector<std::string>& created) {
  std::vector<ProtectedLink> links;
  for (const ProtectedLink& before : spec.protected_links) {
    std::error_code ec;
    bool replaced = std::find(created.begin(), created.end(), before.name) != created.end();
    if (replaced || !fs::exists(fs::symlink_status(spec.workspace / before.name, ec))) {
      links.push_back(before);
    }
  }
  return links;
}

// sandbox.workspace = rw: a protected name the run created at the workspace root (.envrc,
// .claude/, CLAUDE.md, or one in place of a link) would steer git, an agent or the shell on the
// host next, so it is renamed out of the way and named; a protected link the run removed or
// replaced is made again. Through a broker, whose user must not rename or make what the
// caller's directory holds, the caller's client does both, as the caller (move_created_aside,
// restore_protected_links).
void settle_protected_names(const RunContext& run, ContainerResult& result) {
  const RunSpec& spec = *run.spec();
  std::vector<std::string> created = created_protected_names(spec);
  std::vector<ProtectedLink> links = links_to_restore(spec, created);
  if (created.empty() && links.empty()) {
    return;
  }
  std::vector<std::string> lines;
  if (run.request().broker) {
    result.created_names = created;
    result.restore_links = links;
    for (const std::string& name : created) {
      lines.push_back("created " + name + ", which its client moves to " +
                      aside_name(name, run.run_id()));
    }
    for (const ProtectedLink& link : links) {
      lines.push_back("removed the link " + link.name + " -> " + link.text +
                      ", which its client makes again");
    }
  } else {
    lines = move_created_aside(spec.workspace, run.run_id(), created);
    std::vector<std::string> restored = restore_protected_links(spec.workspace, links);
    lines.insert(lines.end(), restored.begin(), restored.end());
  }
  result.set_aside = created_names_summary(lines);
  say(run.request(), result.set_aside + (created.empty() ? "" : k_created_names_advice));
}

// sandbox.workspace = rw with a staged .git: git's state comes back to the host's .git, and the
// audit row names what did; the caller hears of what stayed behind.
void carry_git_state(const RunContext& run, ContainerResult& result) {
  const std::shared_ptr<GitStage>& stage = run.spec()->git_stage;
  if (!stage) {
    return;
  }
  if (run.request().broker) {
    result.handed_git = std::make_shared<HandedGit>(stage->hand_back());
    result.git_carry = describe_handed(*result.handed_git);
    return;
  }
  GitCarry carry = stage->carry_back();
  result.git_carry = describe_carry(carry);
  if (!carry.kept.empty() || !carry.left_behind.empty() || !carry.removed.empty()) {
    say(run.request(), result.git_carry);
  }
}

// A run that could write the workspace: the entries whose status changed since it started, for
// the audit row (git's own changes are its stage's to tell, so .git is not looked into).
void record_workspace_changes(const RunContext& run, ContainerResult& result, timespec since) {
  const RunSpec& spec = *run.spec();
  if (spec.writable_mounts.empty() && run.policy.workspace_mode != WorkspaceMode::rw) {
    return;
  }
  StepTimer step("workspace changes");
  ChangeScanLimits limits;
  limits.max_entries = run.policy.hide_limit;
  limits.skip_names = {".git"};
  try {
    UniqueFd workspace = workspace_for_binds(spec, run.request().broker.has_value());
    result.changed = changed_since(workspace.get(), since, limits);
  } catch (const Fatal& e) {
    result.changed_note = std::string("changed files not counted: ") + e.what();
    return;
  }
  if (result.changed->stopped_at_limit) {
    result.changed_note = "changed files counted in the first " +
                          std::to_string(limits.max_entries) + " entries only";
  } else if (result.changed->unreadable_dirs > 0) {
    result.changed_note = "changed files not counted in " +
                          std::to_string(result.changed->unreadable_dirs) +
                          " directories that could not be opened";
  }
}

// Starts the row, runs the container, records the outcome in the context.
void execute(RunContext& run, const RunEngine& engine) {
  StepTimer row("audit begin");
  begin_row(run);
  row.done();
  log_sandbox(run);
  StepTimer step("container run");
  timespec started = coarse_now();
  ContainerResult result = engine.run(*run.engine, run.call, *run.spec(), run.policy);
  step.done();
  carry_git_state(run, result);
  settle_protected_names(run, result);
  record_workspace_changes(run, result, started);
  run.hints = judge_limits(result, run);
  run.finish(std::move(result));
}

// sandbox.network = allowlist: the run's egress proxy, started before the row and the container.
std::optional<EgressSession> open_egress(const RunContext& run) {
  const RunSpec& spec = *run.spec();
  if (!spec.egress) {
    return std::nullopt;
  }
  size_t colon = spec.user.find(':');
  auto uid = static_cast<uid_t>(std::stoul(spec.user.substr(0, colon)));
  auto gid = static_cast<gid_t>(std::stoul(spec.user.substr(colon + 1)));
  return EgressSession::open(run.policy, *spec.egress, uid, gid);
}

// The proxy's connections join the audit before the run's row completes; after a failed run
// that was refused a connection or made none, one line says what the network allowed (a DNS lookup
// or a direct connect fails without a word of network.allow from the program itself).
void finish_egress(RunContext& run, std::optional<EgressSession>& egress) {
  if (!egress) {
    return;
  }
  auto connections = egress->finish(run.run_id());
  if (run.store != nullptr) {
    try {
      run.store->record_connections(connections);
    } catch (const Fatal& e) {
      say(run.request(),
          std::string("could not record the connections of run ") + run.run_id() + ": " + e.what());
    }
  }
  bool refused = std::any_of(connections.begin(), connections.end(),
                             [](const audit::ConnectionRecord& c) { return !c.allowed; });
  if (run.result()->exit_code != 0 && (refused || connections.empty())) {
    say(run.request(), egress_hint(connections, run.run_id()));
  }
}

void print_dry_run(const RunContext& run) {
  std::vector<std::string> line = {run.engine->client.string()};
  line.insert(line.end(), run.call.args.begin(), run.call.args.end());
  std::cout << shell_join(line) << std::endl;
}

// A run that may be warm: the claim's question to the engine goes out now, and its answer
// comes while the audit database opens. Best effort: whatever fails here fails again, with its
// message, where the run needs it.
void prefetch_warm(const RunContext& run, const RunEngine& engine) {
  if (!engine.prefetch_warm || run.request().dry_run || run.policy.pool_size == 0 ||
      run.policy.network == Network::allowlist || !run.policy.endpoints.empty()) {
    return;
  }
  try {
    std::string image = image_for(run.policy, run.request());
    engine.prefetch_warm(engine.locate(run.policy),
                         is_host_mode(image) ? std::string(k_host_base_image) : image);
  } catch (const std::exception&) {
    // The run goes on: its own steps meet the same failure and report it.
  }
}

// A WAL grown large is folded after this process has exited (fold_audit_wal_after_exit): the
// store closes first, so no SQLite state crosses the fork.
void fold_wal_after_exit(RunContext& run) {
  if (run.store == nullptr || !run.store->wal_needs_folding()) {
    return;
  }
  std::filesystem::path path = run.store->path();
  run.store.reset();
  fold_audit_wal_after_exit(path);
}

// The pool gets a new container for the one this run took, in a detached process: last, once
// the row is complete. The run's outcome is recorded by then, so a refill that cannot start is a
// warning, never the run's result (it used to be caught as a refusal of a run that had run), and
// no step of the run writes a page after the fork shared it.
void refill_pool(const RunContext& run, const RunEngine& engine, const std::string& claimed) {
  StepTimer step("pool refill (detached)");
  try {
    engine.refill_warm(*run.engine, run.policy, *run.spec(), claimed);
  } catch (const std::exception& e) {
    say(run.request(), std::string("warning: the warm pool was not refilled: ") + e.what());
  }
}

// A run placed among engine.endpoints that its engine failed names that engine (as its row's
// `engine` does) and says it was not repeated: code with side effects never runs twice.
void name_failed_engine(RunContext& run) {
  if (!run.policy.endpoints.empty() && run.result()->status == RunStatus::engine_error) {
    run.annotate("; on " + run.engine->describe() +
                 " of engine.endpoints, not run again on another engine");
  }
}

// A ready warm container of the pool, when there is one: the run takes it over.
void claim_warm_container(RunContext& run, const RunEngine& engine) {
  StepTimer step("pool claim");
  if (auto claim = engine.claim_warm(*run.engine, run.policy, *run.spec())) {
    run.take_warm(*claim);
    step.done("claimed " + claim->run_id);
  }
}

// Nothing ran in a warm container removed meanwhile: its row says so, and the command runs cold
// under its own row.
void run_cold_if_warm_was_gone(RunContext& run, const RunEngine& engine) {
  if (run.spec()->warm && run.result()->status == RunStatus::engine_error) {
    run.annotate("; ran cold as run " + run.cold_run_id());
    complete_row(run);
    run.go_cold();
    execute(run, engine);
  }
}

// The exit code to whoever waits on the request's outcome (a broker's session): the row is
// complete, so the caller may go on while this process refills the pool and winds down.
void tell_outcome_early(const RunContext& run) {
  if (run.spec() && run.spec()->git_stage) {  // what it hands back is open already
    RunStatus status = run.result()->status;
    run.spec()->git_stage->release(status != RunStatus::ok && status != RunStatus::error &&
                                   status != RunStatus::oom);
  }
  if (run.spec() && run.spec()->protected_copies) {
    run.spec()->protected_copies->release();
  }
  if (run.request().tell_outcome) {
    const ContainerResult& result = *run.result();
    RunHandback handback{result.handed_git ? std::move(*result.handed_git) : HandedGit(),
                         run.workspace, run.run_id(), result.created_names, result.restore_links};
    run.request().tell_outcome(result.exit_code, std::move(handback));
  }
}

// The run's message and its limit hints, to the caller.
void tell_outcome(RunContext& run) {
  name_failed_engine(run);
  if (!run.result()->message.empty()) {
    say(run.request(), run.result()->message);
  }
  for (const auto& hint : run.hints) {
    say(run.request(), describe_hint(hint));
  }
}

int run_in_container(RunContext& run, const RunEngine& engine) {
  prepare(run, engine);
  if (run.request().dry_run) {
    print_dry_run(run);
    return exit_code::k_ok;
  }
  require_enforced_limits(run, engine);
  std::optional<EgressSession> egress = open_egress(run);
  bool pooled = run.policy.pool_size > 0 && !egress;  // a warm container has no egress mount
  if (pooled) {
    claim_warm_container(run, engine);
  }
  DeferredSignals deferred;  // from the row's start to its completion
  execute(run, engine);
  const std::string claimed = run.spec()->warm ? run.run_id() : "";
  run_cold_if_warm_was_gone(run, engine);
  tell_outcome(run);
  finish_egress(run, egress);
  StepTimer step("audit complete");
  complete_row(run);
  step.done();
  tell_outcome_early(run);
  fold_wal_after_exit(run);
  if (pooled) {
    refill_pool(run, engine, claimed);
  }
  return run.result()->exit_code;
}

}  // namespace

int fill_pool(const RunRequest& request, const RunEngine& engine) {
  RunContext run(request);
  run.policy = policy_for_run(request);
  if (run.policy.pool_size == 0) {
    throw Fatal("pool.size is 0 in this policy (warm mode is off): set it in a config file",
                exit_code::k_usage);
  }
  if (run.policy.network == Network::allowlist) {
    throw Fatal(
        "warm mode does not serve sandbox.network = allowlist (each run needs its own "
        "egress proxy): allowlist runs start cold",
        exit_code::k_usage);
  }
  prepare(run, engine);
  const WarmFill fill = engine.fill_warm(*run.engine, run.policy, *run.spec());
  std::cout << "started " << fill.started << " warm container(s) for " << run.spec()->image
            << " in " << run.workspace.string() << " (pool " << fill.key << ")\n";
  return exit_code::k_ok;
}

ApiCreate cold_api_create(const RunRequest& request, const RunEngine& engine) {
  RunContext run(request);
  run.policy = policy_for_run(request);
  prepare(run, engine);
  return api_create(*run.call.create, run.engine->dialect.is_podman(),
                    CreateInputs{run.engine->env_with(run.spec()->env)});
}

std::unique_ptr<audit::Store> take_preopened_store(const RunRequest& request,
                                                   const audit::StoreOptions& options) {
  PreopenedStore* opened = request.preopened_store.get();
  if (opened == nullptr || opened->store == nullptr || opened->store->path() != options.path ||
      opened->store->anchor_file() != options.anchor_file) {
    return nullptr;
  }
  const audit::ChainKey* held = opened->store->key();
  bool same_key =
      options.key ? held != nullptr && held->secret == options.key->secret : held == nullptr;
  return same_key ? std::move(opened->store) : nullptr;
}

std::shared_ptr<PreopenedStore> preopen_broker_store(const std::filesystem::path& system_file) {
  try {
    Policy floor = load_policy(policy_inputs(BrokerPolicySource{system_file, {}, {}}, {}));
    return std::make_shared<PreopenedStore>(PreopenedStore{std::make_unique<audit::Store>(
        audit::Store::open(audit_store_options(floor, floor.effective_audit_db(), true)))});
  } catch (const Fatal&) {
    return nullptr;
  }
}

int record_broker_refusal(const RunRequest& request, const std::string& message) {
  RunContext run(request);
  run.store = fallback_store(request);
  record_refusal(run, RunStatus::refused, message);
  say(request, message);
  return exit_code::k_sandbox_error;
}

namespace {

// The run's policy; one that does not load refuses the run, recorded in the fallback audit.
bool load_run_policy(RunContext& run, const RunRequest& request) {
  StepTimer policy_step("policy load");
  try {
    run.policy = policy_for_run(request);
  } catch (const Fatal& e) {
    if (!request.dry_run) {
      run.store = fallback_store(request);
    }
    record_refusal(run, RunStatus::refused, e.what());
    say(request, std::string(e.what()) + "; nothing ran");
    return false;
  }
  policy_step.done();
  return true;
}

}  // namespace

int run_sandboxed(const RunRequest& request, const RunEngine& engine) {
  RunContext run(request);
  spdlog::debug("step start: at +{:.1f} ms", ms_since_process_start());
  if (!load_run_policy(run, request)) {
    return exit_code::k_sandbox_error;
  }
  prefetch_warm(run, engine);
  if (!request.dry_run) {
    StepTimer step("audit open");
    run.store = open_store(request, run.policy);
  }
  try {
    return run_in_container(run, engine);
  } catch (const AuditUnavailable& e) {
    say(request, e.what());
    return e.code();
  } catch (const Refusal& e) {
    record_refusal(run, e.status(), e.what());
    say(request, std::string(e.what()) + "; nothing ran");
    return e.code();
  } catch (const Fatal& e) {
    record_refusal(run, RunStatus::refused, e.what());
    say(request, std::string(e.what()) + "; nothing ran");
    return e.code();
  }
}

}  // namespace sandshim::shim
