#include "install/doctor.hpp"

#include <pwd.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "audit/chain.hpp"
#include "audit/store.hpp"
#include "broker/client.hpp"
#include "broker/mode.hpp"
#include "broker/settings.hpp"
#include "broker/status.hpp"
#include "common/command_doc.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "engine/client_output.hpp"
#include "engine/enforcement.hpp"
#include "engine/engine.hpp"
#include "engine/engine_api.hpp"
#include "engine/engine_pool.hpp"
#include "engine/image_host.hpp"
#include "hooks/agents/agent.hpp"
#include "install/agent_settings.hpp"
#include "install/atomic_file.hpp"
#include "install/container_checks.hpp"
#include "install/doctor_engines.hpp"
#include "install/doctor_help.hpp"
#include "install/doctor_sandbox.hpp"
#include "install/doctor_versions.hpp"
#include "install/hook_checks.hpp"
#include "policy/policy.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using nlohmann::ordered_json;

const char* to_string(Status status) {
  switch (status) {
    case Status::ok:
      return "ok";
    case Status::warn:
      return "warn";
    case Status::fail:
      return "fail";
  }
  return "?";
}

namespace {

// What the checks learn, in order: later checks need the policy and the engine.
struct Context {
  fs::path workspace;
  // Broker mode: the broker's identity and status, which the engine, image and audit lines
  // report instead of this uid's own engine and database.
  std::optional<broker::StatusAnswer> broker;
  fs::path broker_socket;
  std::string broker_missing_fix;  // broker.mode = required and none answers: nothing can run
  std::optional<shim::Policy> policy;
  std::optional<shim::Engine> engine;
  std::optional<shim::EngineFacts> facts;
  std::vector<broker::ImageStatus> images;  // direct mode: the policy's images, once inspected
  std::vector<Finding> findings;

  void add(std::string check, Status status, std::string detail, std::string fix = "") {
    findings.push_back({std::move(check), status, std::move(detail), std::move(fix)});
  }
};

fs::path workspace_here() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  return ec ? fs::path() : find_git_root(cwd).value_or(cwd);
}

void check_policy(Context& ctx) {
  try {
    ctx.policy = shim::load_policy({ctx.workspace, {}});
    std::string sources =
        ctx.policy->sources.empty() ? "built-in defaults only" : join(ctx.policy->sources, ", ");
    ctx.add("policy", Status::ok, "loaded (" + sources + ")");
  } catch (const Fatal& e) {
    ctx.add("policy", Status::fail, e.what(),
            "fix the settings named, then `sandshim policy show`");
  }
}

std::string engine_start_fix(const shim::Policy& policy, const std::string& why) {
  if (shim::classify_engine_error(why) == shim::EngineErrorKind::permission) {
    return "this uid may not use the engine: run through the broker (`sudo install/setup.sh`, "
           "or the package's sandshim.socket), or, for a single user only, `sudo usermod -aG "
           "docker $USER` (root-equivalent)";
  }
  return policy.engine == "podman" ? "`podman info` shows why"
                                   : "`sudo systemctl start docker` (or install/setup.sh)";
}

const broker::BrokerStatus* broker_status(const Context& ctx) {
  return ctx.broker && ctx.broker->status ? &*ctx.broker->status : nullptr;
}

// Broker mode: the engine the broker's policy names, as the broker reaches it.
void check_engine_through_broker(Context& ctx) {
  const broker::BrokerStatus* status = broker_status(ctx);
  if (status == nullptr) {
    ctx.add("engine", Status::fail, "not checked: the broker did not answer `status`",
            "see the broker line");
  } else if (!status->policy_ok) {
    ctx.add("engine", Status::fail, "not checked: " + status->policy,
            "fix " + status->system_config + " (root's file), then restart the broker");
  } else if (status->engine_ok) {
    ctx.add("engine", Status::ok, "through the broker: " + status->engine);
  } else {
    ctx.add("engine", Status::fail, "through the broker: " + status->engine,
            "start the engine (`sudo systemctl start docker`); the broker's user must be in its "
            "group (`id sandshim`)");
  }
}

// The engine's client and what its engine says of itself; false, with the failure added, when
// either is missing.
bool locate_and_probe_engine(Context& ctx) {
  try {
    ctx.engine = shim::locate_engine(*ctx.policy);
  } catch (const Fatal& e) {
    ctx.add("engine", Status::fail, e.what(),
            "`sudo apt-get install docker.io`, or set engine.path");
    return false;
  }
  try {
    ctx.facts = shim::probe_engine_facts(*ctx.engine);
  } catch (const std::exception& e) {
    ctx.add("engine", Status::fail,
            ctx.engine->describe() + " (" + ctx.engine->client.string() +
                ") does not answer: " + first_line_of(e.what()),
            engine_start_fix(*ctx.policy, first_line_of(e.what())));
    return false;
  }
  return true;
}

void check_engine(Context& ctx) {
  if (!ctx.broker_missing_fix.empty()) {
    ctx.add("engine", Status::fail,
            "not checked: broker.mode = required and no broker answers at " +
                ctx.broker_socket.string() + ": every run fails closed",
            ctx.broker_missing_fix);
    return;
  }
  if (ctx.broker) {
    check_engine_through_broker(ctx);
    return;
  }
  if (!ctx.policy) {
    ctx.add("engine", Status::fail, "not checked: the policy does not load",
            "fix the policy first");
    return;
  }
  if (!locate_and_probe_engine(ctx)) {
    return;
  }
  const shim::EngineFacts& facts = *ctx.facts;
  ctx.add("engine", Status::ok,
          ctx.engine->describe() + " " + facts.server_version + " (" + ctx.engine->client.string() +
              "), cgroup v" + (facts.cgroup_version.empty() ? "?" : facts.cgroup_version) + " (" +
              facts.cgroup_driver + "), " + (facts.rootless ? "rootless" : "rootful") +
              "; cold runs over " + shim::engine_api_path(*ctx.engine, *ctx.policy).reason);
}

// docker knows runsc only once deps.sh registered it (runsc and runsc-nonet); podman runs the
// binary itself.
// engine.endpoints, pinged by this uid (direct mode) or by the broker for its own list.
void check_engines(Context& ctx) {
  if (const broker::BrokerStatus* status = broker_status(ctx)) {
    if (status->engines_total > 0) {
      ctx.findings.push_back(engines_finding(status->engines_answering, status->engines_total,
                                             "through the broker: " + status->engines));
    }
  } else if (!ctx.broker && ctx.policy && !ctx.policy->endpoints.empty()) {
    auto engines = shim::survey_engines(*ctx.policy);
    ctx.findings.push_back(
        engines_finding(shim::answering(engines), static_cast<int64_t>(engines.size()),
                        shim::engines_line(engines, ctx.policy->engine_max_runs)));
  }
}

bool runsc_usable(const shim::Engine& engine) {
  if (engine.kind == "podman") {
    return ::access("/usr/bin/runsc", X_OK) == 0;
  }
  auto result = run_captured({engine.client.string(), "info", "--format={{json .Runtimes}}"},
                             engine.env, std::chrono::seconds(20));
  return result.status.code == 0 && result.out.find("\"runsc-nonet\"") != std::string::npos;
}

// sandbox.runtime = runsc: without gVisor every run would fail at the engine.
void check_gvisor(Context& ctx) {
  if (runsc_usable(*ctx.engine)) {
    ctx.add("gvisor", Status::ok,
            "sandbox.runtime = runsc: gVisor is available to " + ctx.engine->describe());
  } else {
    ctx.add("gvisor", Status::fail,
            "sandbox.runtime = runsc, but " + ctx.engine->describe() + " cannot run runsc",
            "`sudo install/deps.sh --with-gvisor`");
  }
}

void check_runtime(Context& ctx) {
  if (!ctx.facts) {
    return;
  }
  if (ctx.policy->runtime == shim::Runtime::runsc) {
    check_gvisor(ctx);
  }
  if (ctx.facts->runtime.empty()) {
    ctx.add("runtime", Status::warn, "the engine names no default OCI runtime",
            "check `" + ctx.facts->kind + " info`");
    return;
  }
  ctx.add("runtime", Status::ok, "OCI runtime " + ctx.facts->runtime);
}

void check_seccomp(Context& ctx) {
  if (!ctx.facts) {
    return;
  }
  if (ctx.facts->seccomp) {
    ctx.add("seccomp", Status::ok, "the engine applies its seccomp profile");
  } else {
    ctx.add("seccomp", Status::warn,
            "the engine reports no seccomp support: system calls are not filtered",
            "use an engine and kernel built with seccomp (Debian's docker.io, podman)");
  }
}

void check_limits(Context& ctx) {
  if (!ctx.facts) {
    return;
  }
  shim::Enforcement enforcement = shim::assess_enforcement(*ctx.facts);
  if (enforcement.unenforced.empty()) {
    ctx.add("limits", Status::ok, join(enforcement.enforced, ", ") + " enforced");
    return;
  }
  // The reason reads "WHY; FIX".
  size_t separator = enforcement.reason.find("; ");
  std::string why = enforcement.reason.substr(0, separator);
  std::string fix = separator == std::string::npos ? "see `" + ctx.facts->kind + " info`"
                                                   : enforcement.reason.substr(separator + 2);
  std::string detail = "not enforced: " + join(enforcement.unenforced, ", ") + " (" + why + ")";
  if (ctx.policy->limits_unenforced == shim::Unenforced::accept) {
    ctx.add("limits", Status::warn, detail + "; runs go ahead (limits.unenforced = accept)", fix);
  } else {
    ctx.add("limits", Status::fail, detail + "; every run is refused",
            fix + ", or set limits.unenforced = accept");
  }
}

// Broker mode: the broker's images, and its pool.
void check_images_through_broker(Context& ctx) {
  const broker::BrokerStatus* status = broker_status(ctx);
  if (status == nullptr || !status->engine_ok) {
    return;
  }
  for (const auto& image : status->images) {
    std::string what = image.image + " (" + image.commands + ")";
    if (image.present) {
      ctx.add("image", Status::ok, what + " present, through the broker");
    } else {
      ctx.add("image", Status::fail, what + " missing from the broker's engine",
              "`sudo install/images.sh` (as root, on the broker's engine)");
    }
  }
  ctx.add("pool", Status::ok, status->pool);
}

void check_images(Context& ctx) {
  if (ctx.broker) {
    check_images_through_broker(ctx);
    return;
  }
  if (!ctx.facts) {
    return;
  }
  ctx.images = broker::image_statuses(*ctx.policy, *ctx.engine);
  for (const auto& image : ctx.images) {
    std::string what = image.image + " (" + image.commands + ")";
    if (image.present) {
      ctx.add("image", Status::ok, what + " present");
    } else {
      ctx.add("image", Status::fail, what + " missing",
              "`sandshim images build`, or pull it and map it with images.COMMAND");
    }
  }
}

// Whether check_images found `image` in the engine.
bool image_present(const Context& ctx, const std::string& image) {
  return std::any_of(ctx.images.begin(), ctx.images.end(), [&](const broker::ImageStatus& status) {
    return status.image == image && status.present;
  });
}

// One interpreter's versions, compared once its image is known to be present.
void check_interpreter_version(Context& ctx, const std::string& command, const std::string& path) {
  InterpreterVersions versions{command, ctx.policy->images.at(command), {}, {}, {}};
  probe_host_version(versions, path, ctx.policy->effective_shim_dir());
  if (!versions.host) {
    return;  // nothing on the host to compare with
  }
  if (shim::is_host_mode(versions.image)) {
    probe_host_mode_version(versions, *ctx.engine, path, ctx.policy->effective_shim_dir());
  } else {
    probe_image_version(versions, *ctx.engine);
  }
  std::string mismatch = version_mismatch(versions);
  if (!mismatch.empty()) {
    ctx.add("version", Status::warn, mismatch, version_fix(versions));
    return;
  }
  ctx.add("version", Status::ok,
          command + " " + *versions.inside + " in " + versions.image + ", as the host's " +
              versions.host_path.string() + " (" + *versions.host + ")");
}

// The host's interpreters against their images': a suite sees another version's features.
void check_versions(Context& ctx) {
  if (!ctx.facts) {
    return;
  }
  std::string path_variable = environment::path();
  for (const auto& command : k_versioned_interpreters) {
    auto mapped = ctx.policy->images.find(command);
    if (mapped != ctx.policy->images.end() && image_present(ctx, mapped->second)) {
      check_interpreter_version(ctx, command, path_variable);
    }
  }
}

bool same_directory(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

void check_shims(Context& ctx) {
  if (!ctx.policy) {
    return;
  }
  fs::path dir = ctx.policy->effective_shim_dir();
  fs::path self = self_executable();
  std::vector<std::string> missing;
  for (const auto& [command, image] : ctx.policy->images) {
    std::error_code ec;
    if (fs::canonical(dir / command, ec) != self) {
      missing.push_back(command);
    }
  }
  if (missing.empty()) {
    ctx.add("shims", Status::ok, "links to this binary in " + dir.string());
  } else {
    ctx.add("shims", Status::fail,
            "no link to this binary for " + join(missing, ", ") + " in " + dir.string(),
            "`sandshim install`");
  }
}

void check_path(Context& ctx) {
  if (!ctx.policy) {
    return;
  }
  fs::path dir = ctx.policy->effective_shim_dir();
  std::string path = environment::path();
  std::string first = path.substr(0, path.find(':'));
  std::vector<std::string> covered;
  std::vector<std::string> elsewhere;
  for (const auto& [command, image] : ctx.policy->images) {
    auto found = find_in_path(command, path, [](const fs::path&) { return false; });
    (found && same_directory(found->parent_path(), dir) ? covered : elsewhere).push_back(command);
  }
  std::string fix =
      "`eval \"$(sandshim env)\"` in your shell (agent hooks in `path` mode do it "
      "for the agent)";
  if (covered.empty()) {
    ctx.add("path", Status::warn, dir.string() + " is not on PATH: nothing is rerouted here", fix);
  } else if (!elsewhere.empty() || !same_directory(first, dir)) {
    ctx.add("path", Status::warn,
            dir.string() + " covers " + join(covered, ", ") +
                (elsewhere.empty() ? "" : "; found elsewhere first: " + join(elsewhere, ", ")) +
                (same_directory(first, dir) ? "" : "; it is not first on PATH"),
            fix);
  } else {
    ctx.add("path", Status::ok, dir.string() + " is first on PATH for " + join(covered, ", "));
  }
}

// Broker mode: the broker's audit, verified as `sandshim audit verify` does for this caller.
void check_audit_through_broker(Context& ctx) {
  const broker::BrokerStatus* status = broker_status(ctx);
  if (status == nullptr || !status->policy_ok) {
    return;
  }
  if (status->audit_ok) {
    ctx.add("audit", Status::ok, "the broker's audit, through the broker: " + status->audit);
  } else {
    ctx.add("audit", Status::fail, "the broker's audit, through the broker: " + status->audit,
            "`sandshim audit verify` names the row; tell the administrator (root)");
  }
}

void check_audit(Context& ctx) {
  if (ctx.broker) {
    check_audit_through_broker(ctx);
    return;
  }
  if (!ctx.broker_missing_fix.empty()) {
    return;  // runs fail closed: nothing writes this uid's own database
  }
  fs::path db = ctx.policy ? ctx.policy->effective_audit_db() : shim::Policy{}.effective_audit_db();
  try {
    auto store = audit::Store::open({db});
    audit::VerifyResult verified = audit::verify_chain(store.database());
    if (!verified.ok) {
      ctx.add("audit", Status::fail,
              db.string() + ": the chain does not verify: " + verified.problem,
              "`sandshim audit verify` names the row; keep a copy, then investigate who wrote it");
      return;
    }
    ctx.add("audit", Status::ok,
            db.string() + " writable, chain verified (" + std::to_string(verified.links_checked) +
                " links)");
  } catch (const Fatal& e) {
    ctx.add("audit", Status::fail, e.what(),
            "fix the permissions of " + db.parent_path().string() + ", or set audit.db");
  }
}

std::string user_name_of(uid_t uid);

void check_claude_sandbox(Context& ctx, const AgentConfigPaths& paths) {
  std::vector<ClaudeSettingsSource> sources;
  for (const fs::path& file :
       {paths.claude_dir / "settings.json", ctx.workspace / ".claude" / "settings.json",
        ctx.workspace / ".claude" / "settings.local.json",
        paths.claude_managed_dir / "managed-settings.json"}) {
    sources.push_back({file.string(), read_file(file).value_or(std::string())});
  }
  SandboxFacts facts{ctx.broker || !ctx.broker_missing_fix.empty(), ctx.broker_socket.string(),
                     broker::engine_access(), ::getuid() == 0, user_name_of(::getuid())};
  ctx.findings.push_back(claude_sandbox_finding(claude_sandbox(sources), facts));
}

// "`sandshim install agent claude` (or codex, cursor, gemini, windsurf)": the registry's first
// agent, then the others.
std::string install_any_agent() {
  std::string all = hooks::agent_flags();
  size_t comma = all.find(", ");
  std::string first = all.substr(0, comma);
  std::string others = comma == std::string::npos ? "" : " (or " + all.substr(comma + 2) + ")";
  return "`sandshim install agent " + first + "`" + others;
}

// One line per installed agent: whether that agent will really call the hooks.
void check_hooks(Context& ctx) {
  AgentConfigPaths paths = AgentConfigPaths::from_environment();
  bool any = false;
  bool claude = false;
  for (const AgentSettings& settings : all_agent_settings()) {
    const std::tuple<const char*, fs::path, fs::path> scopes[] = {
        {"project", ctx.workspace / settings.project_file, ctx.workspace},
        {"user", settings.user_file, fs::path()},
        {"managed", managed_settings_file(settings), fs::path()}};
    for (const auto& [scope, file, root] : scopes) {
      std::optional<std::string> text = file.empty() ? std::nullopt : read_file(file);
      if (!text || !has_sandshim_hooks(*text, settings)) {
        continue;
      }
      any = true;
      claude = claude || settings.name == "claude";
      HookCallCheck check = check_hook_will_run(settings, file, root, paths);
      ctx.add("hooks", check.will_run ? Status::ok : Status::fail,
              settings.name + " (" + scope + "): " + check.detail, check.fix);
    }
  }
  if (claude) {
    check_claude_sandbox(ctx, paths);
  }
  if (!any) {
    ctx.add("hooks", Status::warn,
            "no agent's hooks are installed: an agent can walk around the shims",
            install_any_agent());
  }
}

std::string user_name_of(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "";
}

std::string user_named(uid_t uid) {
  std::string name = user_name_of(uid);
  return "uid " + std::to_string(uid) + (name.empty() ? "" : " (" + name + ")");
}

// Who holds the socket, by SO_PEERCRED: a broker of the caller's own uid is no boundary.
void check_broker_identity(Context& ctx) {
  const broker::StatusAnswer& answer = *ctx.broker;
  std::string who =
      "the broker at " + ctx.broker_socket.string() + " runs as " + user_named(answer.broker.uid);
  std::string fix =
      "run the broker as its own system user: `sudo install/setup.sh`, or the "
      "package's sandshim.socket";
  if (answer.broker.uid == ::getuid()) {
    ctx.add("broker", Status::fail,
            who + ", your own: your processes can trace it and use its engine", fix);
  } else if (!answer.status) {
    ctx.add("broker", Status::fail, who + "; " + answer.problem,
            "the broker's log (`journalctl -u sandshim`, or /var/log/sandshim-broker.log)");
  } else if (answer.broker.uid == 0) {
    ctx.add("broker", Status::warn, who + ": every run it serves holds root's rights", fix);
  } else {
    ctx.add("broker", Status::ok,
            who + ", not yours (" + user_named(::getuid()) + "); sandshim " +
                answer.status->version + ", policy " + answer.status->system_config);
  }
}

// Broker mode: can this uid still reach the engine around the broker?
void check_engine_access(Context& ctx) {
  if (::getuid() == 0) {
    ctx.add("access", Status::ok, "root reaches the engine directly (root needs no broker)");
    return;
  }
  std::vector<std::string> ways = broker::engine_access();
  if (ways.empty()) {
    ctx.add("access", Status::ok, "this uid cannot reach the engine around the broker");
    return;
  }
  ctx.add("access", Status::warn,
          "this uid " + join(ways, ", ") +
              ": it reaches the engine around the broker, which is root-equivalent on a rootful "
              "engine",
          "`sudo gpasswd -d " + user_name_of(::getuid()) + " docker`, then log in again");
}

// Broker or direct mode, and in direct mode whether this uid's engine access is root-equivalent;
// in broker mode the broker's identity, its status and this uid's way around it.
// The broker is asked once: the connection that asks for its status is the one that shows it
// answers.
void check_broker(Context& ctx) {
  static constexpr Status k_levels[] = {Status::ok, Status::warn, Status::fail};
  broker::ClientSettings settings;
  try {
    settings = broker::client_settings();
  } catch (const std::exception& e) {
    broker::ModeReport report = broker::unreadable_settings_report(e.what());
    ctx.add("mode", k_levels[static_cast<int>(report.level)], report.detail, report.fix);
    return;
  }
  ctx.broker_socket = settings.socket;
  ctx.broker = broker::status_through_broker(settings);
  broker::ModeReport report = broker::mode_report(settings, ctx.broker.has_value());
  ctx.add("mode", k_levels[static_cast<int>(report.level)], report.detail, report.fix);
  if (ctx.broker) {
    check_broker_identity(ctx);
    check_engine_access(ctx);
  } else if (settings.mode == broker::BrokerMode::required) {
    ctx.broker_missing_fix = report.fix.empty() ? "systemctl start sandshim.socket" : report.fix;
  }
}

std::vector<Finding> run_checks() {
  Context ctx;
  ctx.workspace = workspace_here();
  using Check = void (*)(Context&);
  static constexpr Check k_checks[] = {check_broker,   check_policy,  check_engine, check_engines,
                                       check_runtime,  check_seccomp, check_limits, check_images,
                                       check_versions, check_shims,   check_path,   check_audit,
                                       check_hooks};
  for (Check check : k_checks) {
    check(ctx);
  }
  return ctx.findings;
}

bool any_failed(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.status == Status::fail; });
}

void print_findings(const std::vector<Finding>& findings) {
  for (const auto& finding : findings) {
    std::string status = to_string(finding.status);
    std::cout << status << std::string(6 - status.size(), ' ') << finding.check
              << std::string(finding.check.size() < 9 ? 9 - finding.check.size() : 1, ' ')
              << finding.detail;
    if (finding.status != Status::ok && !finding.fix.empty()) {
      std::cout << "; fix: " << finding.fix;
    }
    std::cout << "\n";
  }
}

void print_findings_json(const std::vector<Finding>& findings) {
  ordered_json checks = ordered_json::array();
  for (const auto& finding : findings) {
    checks.push_back({{"check", finding.check},
                      {"status", to_string(finding.status)},
                      {"detail", finding.detail},
                      {"fix", finding.fix}});
  }
  ordered_json out = {{"ok", !any_failed(findings)}, {"checks", checks}};
  std::cout << out.dump(2) << "\n";
}

// ---------------------------------------------------------------------------------------------
// --containers

std::vector<std::string> running_sandshim_containers(const shim::Engine& engine) {
  auto result = run_captured(
      {engine.client.string(), "ps", "--filter=label=org.sandshim.run", "--format={{.ID}}"},
      engine.env, std::chrono::seconds(30));
  if (result.status.code != 0) {
    throw Fatal("cannot list containers: " + trim(result.err) + "; is the engine running?");
  }
  return split_words(result.out);
}

std::string inspect(const shim::Engine& engine, const std::vector<std::string>& containers) {
  std::vector<std::string> argv = {engine.client.string(), "inspect", "--type=container", "--"};
  argv.insert(argv.end(), containers.begin(), containers.end());
  auto result = run_captured(argv, engine.env, std::chrono::seconds(30));
  if (result.status.code != 0) {
    throw Fatal("cannot inspect " + join(containers, " ") + ": " + first_line_of(trim(result.err)));
  }
  return result.out;
}

std::optional<std::string> inspect_if_present(const shim::Engine& engine, const std::string& id) {
  auto result = run_captured({engine.client.string(), "inspect", "--type=container", "--", id},
                             engine.env, std::chrono::seconds(30));
  return result.status.code == 0 ? std::optional(result.out) : std::nullopt;
}

void print_reports(const std::vector<ContainerReport>& reports) {
  size_t failed = 0;
  for (const auto& report : reports) {
    failed += report.passed() ? 0 : 1;
    for (const auto& check : report.checks) {
      std::cout << check.status << std::string(6 - check.status.size(), ' ') << report.name << "  "
                << check.id << std::string(6 - check.id.size(), ' ') << check.title << ": "
                << check.detail << "\n";
    }
  }
  std::cout << reports.size() << " container(s) checked, " << failed << " failed\n";
}

void print_reports_json(const std::vector<ContainerReport>& reports) {
  ordered_json containers = ordered_json::array();
  bool ok = true;
  for (const auto& report : reports) {
    ordered_json checks = ordered_json::array();
    for (const auto& check : report.checks) {
      checks.push_back({{"id", check.id},
                        {"title", check.title},
                        {"status", check.status},
                        {"detail", check.detail}});
    }
    ok = ok && report.passed();
    containers.push_back({{"name", report.name},
                          {"id", report.id},
                          {"passed", report.passed()},
                          {"checks", checks}});
  }
  std::cout << ordered_json{{"ok", ok}, {"containers", containers}}.dump(2) << "\n";
}

// Every running sandshim container, inspected one by one: a single-use container may end
// between the listing and its inspection.
std::vector<ContainerReport> check_running_containers(const shim::Engine& engine,
                                                      const HostSecurity& host) {
  std::vector<ContainerReport> reports;
  for (const auto& id : running_sandshim_containers(engine)) {
    if (auto inspected = inspect_if_present(engine, id)) {
      auto found = check_containers(*inspected, host);
      reports.insert(reports.end(), found.begin(), found.end());
    }
  }
  return reports;
}

int containers_main(const std::vector<std::string>& names, bool as_json) {
  shim::Policy policy = shim::load_policy({workspace_here(), {}});
  shim::Engine engine = shim::locate_engine(policy);
  shim::EngineFacts facts;
  try {
    facts = shim::probe_engine_facts(engine);
  } catch (const shim::EngineInfoError& e) {
    throw Fatal("the engine does not answer: " + first_line_of(e.what()));
  }
  HostSecurity host{facts.apparmor, facts.selinux};
  std::vector<ContainerReport> reports = names.empty()
                                             ? check_running_containers(engine, host)
                                             : check_containers(inspect(engine, names), host);
  if (as_json) {
    print_reports_json(reports);
  } else if (reports.empty()) {
    std::cout << "no running sandshim container\n";
  } else {
    print_reports(reports);
  }
  bool ok = std::all_of(reports.begin(), reports.end(),
                        [](const ContainerReport& report) { return report.passed(); });
  return ok ? exit_code::k_ok : 1;
}

}  // namespace

CommandDoc doctor_doc() {
  po::options_description options("Options");
  options.add_options()("json", "machine-readable output")(
      "containers", "inspect running sandshim containers (or the CONTAINERs named)")(
      "container", po::value<std::vector<std::string>>()->composing()->value_name("CONTAINER"),
      "CONTAINER: a name or id to inspect (with --containers; may repeat)");
  return make_command_doc(
      "doctor", "check the engine, limits, images, PATH, audit and hooks (--containers: CIS)",
      k_doctor_usage, options);
}

int doctor_main(const std::vector<std::string>& args) {
  po::positional_options_description positional;
  positional.add("container", -1);
  po::variables_map vm;
  if (!parse_subcommand_options(args, doctor_doc(), vm, &positional)) {
    return exit_code::k_ok;
  }
  bool as_json = vm.count("json") != 0;
  std::vector<std::string> names;
  if (vm.count("container") != 0) {
    names = vm["container"].as<std::vector<std::string>>();
  }
  if (vm.count("containers") != 0) {
    return containers_main(names, as_json);
  }
  if (!names.empty()) {
    throw Fatal("container names need --containers (see `sandshim doctor --help`)",
                exit_code::k_usage);
  }
  std::vector<Finding> findings = run_checks();
  if (as_json) {
    print_findings_json(findings);
  } else {
    print_findings(findings);
  }
  return any_failed(findings) ? 1 : exit_code::k_ok;
}

}  // namespace sandshim::install
