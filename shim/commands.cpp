#include "shim/commands.hpp"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>

#include "audit/store.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/escape.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/terminal.hpp"
#include "engine/engine.hpp"
#include "engine/engine_client.hpp"
#include "engine/engine_names.hpp"
#include "policy/policy.hpp"
#include "policy/reach.hpp"
#include "pool/pool.hpp"
#include "pool/run_engine.hpp"
#include "run/git_stage.hpp"
#include "run/protected_copies.hpp"
#include "run/run_request.hpp"
#include "run/sandbox.hpp"
#include "shim/k8s_manifests.hpp"

namespace sandshim::shim {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* const k_run_usage = R"(sandshim run [OPTIONS] -- COMMAND [ARGS...]

Runs COMMAND in a hardened single-use container: no network, no capabilities, read-only root
and workspace, a 64 MiB noexec /tmp, memory/cpu/pids caps, a non-root user, a scrubbed
environment and a deadline. The image comes from the policy (images.COMMAND) unless --image.
Options override every config file for this run.

Examples:
  sandshim run -- python -c 'print(1)'
  sandshim run --timeout 5s --memory 256m -- node script.js
  sandshim run --image python:3.12-alpine -- python3 -V
  sandshim run --dry-run -- sh -c 'ls'        # print the engine command, run nothing

Exit codes: the command's own; 124 deadline passed; 125 sandshim or the engine failed (nothing
ran); 126/127 the command cannot run / was not found in the image; 128+N stopped by signal N
(137 with a message naming the memory limit for an OOM kill).)";

// Each `sandshim run` flag is a policy key applied over every config layer.
const std::pair<const char*, const char*> k_run_flag_keys[] = {
    {"timeout", "sandbox.timeout"},  {"memory", "sandbox.memory"},
    {"cpus", "sandbox.cpus"},        {"pids", "sandbox.pids"},
    {"network", "sandbox.network"},  {"workspace", "sandbox.workspace"},
    {"tmp-size", "sandbox.tmp_size"}};

// --allow NAME (repeatable) adds to the configured network.allow and, unless --network says
// otherwise, turns the allowlist on.
void add_allow_overrides(const po::variables_map& vm, std::vector<Setting>& overrides) {
  if (vm.count("allow") == 0) {
    return;
  }
  if (vm.count("network") == 0) {
    overrides.push_back({"sandbox.network", "allowlist", {"command line", 0}});
  }
  overrides.push_back({"network.allow",
                       "+" + join(vm["allow"].as<std::vector<std::string>>(), " "),
                       {"command line", 0}});
}

// The policy settings `sandshim run`'s flags make for COMMAND (`pool fill` takes the same).
std::vector<Setting> run_overrides(const po::variables_map& vm,
                                   const std::vector<std::string>& command) {
  std::vector<Setting> overrides;
  for (const auto& [flag, key] : k_run_flag_keys) {
    if (vm.count(flag) != 0) {
      overrides.push_back({key, vm[flag].as<std::string>(), {"command line", 0}});
    }
  }
  add_allow_overrides(vm, overrides);
  if (vm.count("image") != 0) {
    std::string name = fs::path(command.front()).filename().string();
    overrides.push_back({"images." + name, vm["image"].as<std::string>(), {"command line", 0}});
  }
  return overrides;
}

}  // namespace

int shim_main(const std::string& invoked_as, const std::vector<std::string>& argv) {
  RunRequest request = request_from_process(invoked_as, argv);
  request.dry_run = dry_run_requested(request);
  return shim_run(std::move(request));
}

int shim_run(RunRequest request) {
  request.command.at(0) = request.invoked_as;
  return run_sandboxed(request, real_run_engine());
}

CommandDoc run_doc() {
  po::options_description options("Options");
  options.add_options()("image", po::value<std::string>()->value_name("IMAGE"),
                        "image to run COMMAND in")(
      "timeout", po::value<std::string>()->value_name("DURATION"), "deadline, e.g. 30s, 2m")(
      "memory", po::value<std::string>()->value_name("SIZE"), "memory limit, e.g. 512m")(
      "cpus", po::value<std::string>()->value_name("N"), "CPU limit in cores, e.g. 0.5")(
      "pids", po::value<std::string>()->value_name("N"), "process and thread limit")(
      "network", po::value<std::string>()->value_name("none|allowlist|bridge"),
      "none (default), allowlist (only network.allow) or bridge")(
      "allow", po::value<std::vector<std::string>>()->value_name("NAME"),
      "add NAME (or *.SUFFIX, NAME:PORT) to network.allow; implies --network allowlist")(
      "workspace", po::value<std::string>()->value_name("ro|rw"),
      "workspace mount: ro (default) or rw")(
      "tmp-size", po::value<std::string>()->value_name("SIZE"), "size of /tmp, e.g. 64m")(
      "wrap-shell",
      "COMMAND is an agent's whole shell command, as `sandshim -c` starts it: "
      "sandbox.workspace = wrap makes the workspace writable for it")(
      "dry-run", "print the engine command line and run nothing");
  return make_command_doc("run", "run a command in a hardened single-use container", k_run_usage,
                          options);
}

// Splits `[OPTIONS] -- COMMAND...` into the options sandshim reads and the command's argv.
std::vector<std::string> split_at_separator(const std::vector<std::string>& args,
                                            std::vector<std::string>& command) {
  auto separator = std::find(args.begin(), args.end(), "--");
  if (separator != args.end()) {
    command.assign(separator + 1, args.end());
  }
  return {args.begin(), separator};
}

int run_main(const std::vector<std::string>& args) {
  RunRequest caller = request_from_process("run", {});
  caller.dry_run = dry_run_requested(caller);
  return run_command(args, std::move(caller));
}

int run_command(const std::vector<std::string>& args, RunRequest caller) {
  std::vector<std::string> command;
  std::vector<std::string> own = split_at_separator(args, command);
  po::variables_map vm;
  if (!parse_subcommand_options(own, run_doc(), vm)) {
    return exit_code::k_ok;
  }
  if (command.empty()) {
    throw Fatal("no command to run: sandshim run [OPTIONS] -- COMMAND [ARGS...]",
                exit_code::k_usage);
  }
  caller.invoked_as = "run";
  caller.overrides = run_overrides(vm, command);
  caller.command = std::move(command);
  caller.dry_run = caller.dry_run || vm.count("dry-run") != 0;
  caller.wrap_shell = vm.count("wrap-shell") != 0;
  return run_sandboxed(caller, real_run_engine());
}

namespace {

Policy policy_here() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  return load_policy({ec ? fs::path() : find_git_root(cwd).value_or(cwd), {}});
}

bool image_present(const Engine& engine, const std::string& image) {
  return EngineClient(engine).inspect_image(image, std::chrono::seconds(20)).has_value();
}

// images.sh: next to the installed binary (PREFIX/share/sandshim), at the configured prefix, or
// in the source tree of a build that was never installed.
fs::path images_script() {
  std::vector<fs::path> candidates = {self_executable().parent_path() / SANDSHIM_DATA_DIR_FROM_BIN,
                                      fs::path(SANDSHIM_DATA_DIR),
                                      fs::path(SANDSHIM_SOURCE_DIR) / "install"};
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "images.sh")) {
      return dir / "images.sh";
    }
  }
  throw Fatal("cannot build images: images.sh is not in " + candidates.front().string() +
              " nor " SANDSHIM_DATA_DIR
              "; reinstall sandshim (or run install/images.sh from its "
              "source tree)");
}

int build_images(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/bash", images_script().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "HOME=" + home_directory().string()};
  // The build script's own settings (state dir, Debian mirror, proxies) still reach it.
  for (const char* name :
       {"SANDSHIM_STATE_DIR", "SANDSHIM_DEBIAN_MIRROR", "http_proxy", "https_proxy", "TMPDIR"}) {
    if (auto value = environment::text(name)) {
      env.push_back(std::string(name) + "=" + *value);
    }
  }
  SpawnOptions options;
  options.argv = argv;
  options.env = env;
  return wait_for(spawn(options)).code;
}

}  // namespace

CommandDoc images_doc() {
  return make_command_doc(
      "images", "list the images the policy expects; `images build` builds them",
      "sandshim images [build [--only python|node|sh|wrap] [--force]]\n\n"
      "Lists the image each shimmed command runs in and whether it is present.\n"
      "`sandshim images build` builds the defaults locally from Debian packages.",
      po::options_description("Options"), {}, {"build"});
}

CommandDoc images_build_doc() {
  po::options_description options("Options");
  options.add_options()(
      "only", po::value<std::vector<std::string>>()->value_name("python|node|sh|wrap"),
      "build only this image (repeatable)")("force", "rebuild even when the image already exists");
  return make_command_doc(
      "images build", "build the default images from Debian packages",
      "sandshim images build [--only python|node|sh|wrap]... [--force]\n\n"
      "Builds sandshim/python:bookworm, sandshim/node:bookworm, sandshim/sh:bookworm and\n"
      "sandshim/wrap:bookworm (for hook.mode = wrap) from\n"
      "Debian packages (debootstrap, no registry), needs root (it asks sudo). Each image is\n"
      "imported under a candidate tag, smoke-tested under the sandbox's hardening, and only then\n"
      "given its final tag: a failed build leaves no half-made image. Progress goes to stderr;\n"
      "the full logs stay in the state directory it names ($SANDSHIM_STATE_DIR, else\n"
      "/var/tmp/sandshim).",
      options);
}

int images_main(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "build") {
    std::vector<std::string> build_args(args.begin() + 1, args.end());
    po::variables_map vm;
    if (!parse_subcommand_options(build_args, images_build_doc(), vm)) {
      return exit_code::k_ok;
    }
    return build_images(build_args);
  }
  po::variables_map vm;
  if (!parse_subcommand_options(args, images_doc(), vm)) {
    return exit_code::k_ok;
  }
  Policy policy = policy_here();
  Engine engine = locate_engine(policy);
  int missing = 0;
  for (const auto& [command, image] : policy.images) {
    bool present = image_present(engine, image);
    missing += present ? 0 : 1;
    std::cout << command << "\t" << image << "\t" << (present ? "present" : "missing") << "\n";
  }
  if (missing > 0) {
    std::cerr << "sandshim: " << missing
              << " image(s) missing: build the defaults with `sandshim images build`, or pull "
                 "and map your own with images.COMMAND = IMAGE\n";
  }
  return missing > 0 ? 1 : 0;
}

namespace {

// Containers of sandshim's whose deadline label has passed: their shim and guardian are gone.
std::vector<std::string> expired_containers(const Engine& engine) {
  auto listed =
      EngineClient(engine).ps_by_label(std::string(k_label_run), std::string(k_label_deadline));
  if (!listed.reply.ok()) {
    throw Fatal("cannot list containers: " + trim(listed.reply.err) +
                "; start the engine (`docker info` must answer) or set engine.endpoint");
  }
  std::vector<std::string> expired;
  int64_t now = wall_clock_ms() / 1000;
  for (const auto& [name, deadline] : listed.containers) {
    if (!deadline.empty() && deadline.find_first_not_of("0123456789") == std::string::npos &&
        std::stoll(deadline) < now) {
      expired.push_back(name);
    }
  }
  return expired;
}

}  // namespace

CommandDoc gc_doc() {
  return make_command_doc(
      "gc", "remove expired sandshim containers, mark abandoned audit rows",
      "sandshim gc\n\nRemoves sandshim containers past their deadline (their "
      "shim was killed) and warm containers idle past pool.idle_ttl, the caches "
      "and git stages of workspaces that are gone, and marks audit rows of "
      "dead shims as abandoned.",
      po::options_description("Options"));
}

int gc_main(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, gc_doc(), vm)) {
    return exit_code::k_ok;
  }
  Policy policy = policy_here();
  Engine engine = locate_engine(policy);
  auto expired = expired_containers(engine);
  for (const auto& name : expired) {
    EngineClient(engine).remove(name);
  }
  std::cout << "removed " << expired.size() << " expired container(s)\n";
  std::cout << "removed " << collect_pool_garbage(engine) << " idle warm container(s)\n";
  std::cout << "removed " << collect_cache_garbage() << " cache(s) of removed workspaces\n";
  std::cout << "removed " << remove_dirs_of_removed_workspaces(git_stage_root())
            << " git stage(s) of removed workspaces\n";
  std::cout << "removed " << remove_dirs_of_removed_workspaces(protected_copies_root())
            << " copy set(s) of protected names of removed workspaces\n";
  auto store = audit::Store::open({policy.effective_audit_db()});
  std::cout << "marked " << store.mark_abandoned_runs() << " abandoned run(s)\n";
  // A decision whose PostToolUse never came is sealed into the chain after an hour.
  std::cout << "sealed " << store.seal_pending_decisions(std::chrono::hours(1))
            << " pending decision(s)\n";
  store.checkpoint();  // fold the WAL into the database file, so a plain copy is complete
  return exit_code::k_ok;
}

namespace {

struct PolicyLine {
  std::string key;
  std::string value;
  std::string origin;
};

std::vector<PolicyLine> policy_lines(const Policy& policy) {
  auto origin_of = [&](const std::string& key) {
    auto origin = policy.origins.find(key);
    return origin == policy.origins.end() ? std::string("default") : origin->second.describe();
  };
  std::vector<PolicyLine> lines;
  for (const auto& key : policy_keys()) {
    if (key.name != "images.COMMAND") {
      lines.push_back({key.name, render_value(policy, key.name), origin_of(key.name)});
    }
  }
  for (const auto& [command, image] : policy.images) {
    lines.push_back({"images." + command, image, origin_of("images." + command)});
  }
  return lines;
}

// `key = value  # origin`, aligned; on a terminal the values set away from the defaults stand out.
void print_policy(const Policy& policy, std::ostream& out, bool color) {
  auto lines = policy_lines(policy);
  size_t key_width = 0;
  size_t value_width = 0;
  for (const auto& line : lines) {
    key_width = std::max(key_width, line.key.size());
    value_width = std::max(value_width, line.value.size());
  }
  for (const auto& line : lines) {
    bool changed = line.origin != "default";
    out << terminal::paint(line.key, terminal::Style::bold, color)
        << std::string(key_width - line.key.size(), ' ') << " = "
        << terminal::paint(line.value, terminal::Style::cyan, color && changed)
        << std::string(value_width - line.value.size(), ' ') << "  # "
        << terminal::paint(line.origin, changed ? terminal::Style::yellow : terminal::Style::dim,
                           color)
        << "\n";
  }
}

}  // namespace

CommandDoc policy_doc() {
  return make_command_doc(
      "policy",
      "show the effective policy (`policy show`), its keys (`policy keys`), or it as Kubernetes "
      "objects (`policy k8s`)",
      "sandshim policy [show|keys|k8s]\n\n"
      "show (the default) prints every key's effective value and where it came from (a default,\n"
      "a config file and line, the environment); keys lists every key with its default and help;\n"
      "k8s prints the policy as agent-sandbox objects (see `sandshim policy k8s --help`).",
      po::options_description("Options"), {}, {"show", "keys", "k8s"});
}

CommandDoc policy_k8s_doc() {
  po::options_description options("Options");
  options.add_options()("command", po::value<std::string>()->default_value("python"),
                        "whose image (images.COMMAND) the sandboxes run")(
      "name", po::value<std::string>()->value_name("NAME"),
      "the objects' name (default: sandshim-COMMAND)")(
      "namespace", po::value<std::string>()->value_name("NS"), "metadata.namespace")(
      "runtime-class", po::value<std::string>()->default_value("gvisor"),
      "the pods' RuntimeClass (a gVisor or Kata one)")(
      "warm-pool", po::value<int64_t>()->default_value(0)->value_name("N"),
      "add a SandboxWarmPool of N sandboxes")("json", "a JSON list instead of YAML documents");
  return make_command_doc(
      "policy k8s", "print the effective policy as agent-sandbox objects (docs/kubernetes.md)",
      "sandshim policy k8s [options]\n\n"
      "Prints a NetworkPolicy and a SandboxTemplate (extensions.agents.x-k8s.io/v1beta1) whose\n"
      "pod carries the policy's hardening: non-root uid 65534, a read-only root, no capability,\n"
      "no privilege escalation, seccomp RuntimeDefault, the memory and CPU limits, /tmp's size,\n"
      "the RuntimeClass, no service account token; egress denied, or only to the egress proxy\n"
      "for an allowlist. Nothing is applied: pipe it to `kubectl apply -f -`.",
      options,
      "\nExamples:\n  sandshim policy k8s --namespace agents --warm-pool 4 | kubectl apply -f -\n");
}

int policy_k8s_main(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, policy_k8s_doc(), vm)) {
    return exit_code::k_ok;
  }
  ManifestOptions options;
  options.command = vm["command"].as<std::string>();
  options.name = vm.count("name") != 0 ? vm["name"].as<std::string>() : "";
  options.namespace_name = vm.count("namespace") != 0 ? vm["namespace"].as<std::string>() : "";
  options.runtime_class = vm["runtime-class"].as<std::string>();
  options.warm_pool = vm["warm-pool"].as<int64_t>();
  auto objects = k8s_manifests(policy_here(), options);
  std::cout << (vm.count("json") != 0 ? escape_json_controls(objects.dump(2)) + "\n"
                                      : to_yaml_documents(objects));
  return exit_code::k_ok;
}

int policy_main(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!args.empty() && args.front().starts_with("-") &&
      !parse_subcommand_options(args, policy_doc(), vm)) {
    return exit_code::k_ok;
  }
  std::string what = args.empty() ? "show" : args.front();
  if (what == "k8s") {
    return policy_k8s_main(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (what == "keys") {
    std::cout << format_policy_keys();
    return exit_code::k_ok;
  }
  if (what != "show") {
    throw Fatal("unknown policy command " + quoted(what) +
                    ": use `sandshim policy show`, `sandshim policy keys` or `sandshim policy k8s`",
                exit_code::k_usage);
  }
  print_policy(policy_here(), std::cout, terminal::use_color(STDOUT_FILENO));
  return exit_code::k_ok;
}

namespace {

const char* const k_pool_usage = R"(sandshim pool status|fill COMMAND|drain

Warm mode (pool.size = N in a config file): up to N containers per image, workspace and
policy are started in advance with the same confinement and wait idle; a run claims one, runs
in it with its own cwd, user, environment and stdin, and the container is removed afterwards.

  status          list the idle warm containers of your pools
  fill [RUN OPTIONS] COMMAND
                  start warm containers for COMMAND's image in this workspace now, under
                  the policy `sandshim run [RUN OPTIONS] -- COMMAND` would have
  drain           remove every idle warm container of your pools)";

int pool_status() {
  auto entries = list_pool_entries();
  int64_t now = wall_clock_ms() / 1000;
  for (const auto& entry : entries) {
    std::cout << "sandshim-" << entry.run_id << "\t" << entry.image << "\t" << entry.workspace
              << "\tpool " << entry.key << "\t"
              << (entry.expires_epoch_s > now
                      ? "idle, expires in " + std::to_string(entry.expires_epoch_s - now) + "s"
                      : std::string("expired"))
              << "\n";
  }
  std::cout << entries.size() << " idle warm container(s)\n";
  return exit_code::k_ok;
}

}  // namespace

CommandDoc pool_doc() {
  return make_command_doc(
      "pool", "warm containers: `pool status`, `pool fill COMMAND`, `pool drain`", k_pool_usage,
      po::options_description("Options"), {}, {"status", "fill", "drain"});
}

namespace {

// `pool fill [RUN OPTIONS] [--] COMMAND`: the pool that `sandshim run` with the same options
// claims from (its flags are part of the policy, so of the pool's key).
int pool_fill_main(const std::vector<std::string>& args) {
  std::vector<std::string> command;
  std::vector<std::string> own = split_at_separator(args, command);
  if (command.empty() && !own.empty() && !own.back().starts_with("-")) {
    command = {own.back()};
    own.pop_back();
  }
  po::variables_map vm;
  if (!parse_subcommand_options(own, run_doc(), vm)) {
    return exit_code::k_ok;
  }
  if (command.size() != 1) {
    throw Fatal("usage: sandshim pool fill [RUN OPTIONS] [--] COMMAND", exit_code::k_usage);
  }
  RunRequest request = request_from_process("pool", command, run_overrides(vm, command));
  request.wrap_shell = vm.count("wrap-shell") != 0;  // wrap mode's pool: `--wrap-shell -- bash`
  return fill_pool(request, real_run_engine());
}

}  // namespace

int pool_main(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "fill" && args.size() > 2) {
    return pool_fill_main({args.begin() + 1, args.end()});
  }
  po::options_description words_option;
  words_option.add_options()("words", po::value<std::vector<std::string>>(), "");
  po::positional_options_description positional;
  positional.add("words", -1);
  po::variables_map vm;
  if (!parse_subcommand_options(args, pool_doc(), vm, &positional, &words_option)) {
    return exit_code::k_ok;
  }
  auto words = vm.count("words") != 0 ? vm["words"].as<std::vector<std::string>>()
                                      : std::vector<std::string>{"status"};
  const std::string& what = words.front();
  if (what == "status" && words.size() == 1) {
    return pool_status();
  }
  if (what == "drain" && words.size() == 1) {
    Engine engine = locate_engine(policy_here());
    std::cout << "removed " << drain_pools(engine) << " warm container(s)\n";
    return exit_code::k_ok;
  }
  if (what == "fill" && words.size() == 2) {
    return fill_pool(request_from_process("pool", {words[1]}), real_run_engine());
  }
  throw Fatal("usage: " + first_line_of(k_pool_usage), exit_code::k_usage);
}

}  // namespace sandshim::shim
