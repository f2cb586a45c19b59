#include "shim/commands.hpp"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>

#include "audit/store.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "shim/engine.hpp"
#include "shim/policy.hpp"
#include "shim/pool.hpp"
#include "shim/sandbox.hpp"

namespace sandshim::shim {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::string(value) != "" && std::string(value) != "0";
}

}  // namespace

bool parse_subcommand_options(const std::vector<std::string>& args,
                              po::options_description& options, po::variables_map& vm,
                              const std::string& usage,
                              const po::positional_options_description* positional) {
  options.add_options()("help,h", "show this help");
  try {
    po::command_line_parser parser(args);
    parser.options(options);
    if (positional != nullptr) {
      parser.positional(*positional);
    }
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Fatal(std::string(e.what()) + " (see `" +
                    trim(usage.substr(0, usage.find_first_of("[\n"))) + " --help`)",
                exit_code::k_usage);
  }
  if (vm.count("help") != 0) {
    std::cout << usage << "\n\n" << options << std::endl;
    return false;
  }
  return true;
}

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

}  // namespace

int shim_main(const std::string& invoked_as, const std::vector<std::string>& argv) {
  Invocation invocation;
  invocation.invoked_as = invoked_as;
  invocation.command = argv;
  invocation.command[0] = invoked_as;
  invocation.dry_run = env_flag("SANDSHIM_DRY_RUN");
  return run_sandboxed(invocation);
}

int run_main(const std::vector<std::string>& args) {
  auto separator = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> own(args.begin(), separator);
  std::vector<std::string> command;
  if (separator != args.end()) {
    command.assign(separator + 1, args.end());
  }
  po::options_description options("Options");
  options.add_options()("image", po::value<std::string>(), "image to run COMMAND in")(
      "timeout", po::value<std::string>(), "deadline, e.g. 30s, 2m")(
      "memory", po::value<std::string>(), "memory limit, e.g. 512m")(
      "cpus", po::value<std::string>(), "CPU limit in cores, e.g. 0.5")(
      "pids", po::value<std::string>(), "process and thread limit")(
      "network", po::value<std::string>(), "none (default) or bridge")(
      "workspace", po::value<std::string>(), "workspace mount: ro (default) or rw")(
      "tmp-size", po::value<std::string>(), "size of /tmp, e.g. 64m")(
      "dry-run", "print the engine command line and run nothing");
  po::variables_map vm;
  if (!parse_subcommand_options(own, options, vm, k_run_usage)) {
    return exit_code::k_ok;
  }
  if (command.empty()) {
    throw Fatal("no command to run: sandshim run [OPTIONS] -- COMMAND [ARGS...]",
                exit_code::k_usage);
  }
  Invocation invocation{
      "run", command, {}, vm.count("dry-run") != 0 || env_flag("SANDSHIM_DRY_RUN")};
  for (const auto& [flag, key] : k_run_flag_keys) {
    if (vm.count(flag) != 0) {
      invocation.overrides.push_back({key, vm[flag].as<std::string>(), {"command line", 0}});
    }
  }
  if (vm.count("image") != 0) {
    std::string name = fs::path(command.front()).filename().string();
    invocation.overrides.push_back(
        {"images." + name, vm["image"].as<std::string>(), {"command line", 0}});
  }
  return run_sandboxed(invocation);
}

namespace {

Policy policy_here() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  return load_policy({ec ? fs::path() : find_git_root(cwd).value_or(cwd), {}});
}

bool image_present(const Engine& engine, const std::string& image) {
  auto result =
      run_captured({engine.client.string(), "image", "inspect", "--format={{.Id}}", image},
                   engine.env, std::chrono::seconds(20));
  return result.status.code == 0;
}

fs::path images_script() {
  for (const fs::path& dir :
       {fs::path(SANDSHIM_DATA_DIR), fs::path(SANDSHIM_SOURCE_DIR) / "install"}) {
    if (fs::exists(dir / "images.sh")) {
      return dir / "images.sh";
    }
  }
  throw Fatal("images.sh not found in " SANDSHIM_DATA_DIR "; reinstall sandshim");
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
    if (const char* value = std::getenv(name); value != nullptr) {
      env.push_back(std::string(name) + "=" + value);
    }
  }
  SpawnOptions options;
  options.argv = argv;
  options.env = env;
  return wait_for(spawn(options)).code;
}

}  // namespace

int images_main(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "build") {
    return build_images(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  po::options_description options("Options");
  po::variables_map vm;
  if (!parse_subcommand_options(
          args, options, vm,
          "sandshim images [build [--only python|node|sh] [--force]]\n\n"
          "Lists the image each shimmed command runs in and whether it is present.\n"
          "`sandshim images build` builds the defaults locally from Debian packages.")) {
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
  auto result =
      run_captured({engine.client.string(), "ps", "--all", "--filter=label=org.sandshim.run",
                    "--format={{.Names}} " + engine.dialect.label_format("org.sandshim.deadline")},
                   engine.env, std::chrono::seconds(30));
  if (result.status.code != 0) {
    throw Fatal("cannot list containers: " + trim(result.err) + "; is the engine running?");
  }
  std::vector<std::string> expired;
  int64_t now = wall_clock_ms() / 1000;
  std::istringstream lines(result.out);
  std::string name;
  std::string deadline;
  while (lines >> name >> deadline) {
    if (deadline.find_first_not_of("0123456789") == std::string::npos &&
        std::stoll(deadline) < now) {
      expired.push_back(name);
    }
  }
  return expired;
}

}  // namespace

int gc_main(const std::vector<std::string>& args) {
  po::options_description options("Options");
  po::variables_map vm;
  if (!parse_subcommand_options(
          args, options, vm,
          "sandshim gc\n\nRemoves sandshim containers past their deadline (their shim "
          "was killed) and warm containers idle past pool.idle_ttl, and marks audit rows of "
          "dead shims as abandoned.")) {
    return exit_code::k_ok;
  }
  Policy policy = policy_here();
  Engine engine = locate_engine(policy);
  auto expired = expired_containers(engine);
  for (const auto& name : expired) {
    run_captured({engine.client.string(), "rm", "--force", name}, engine.env,
                 std::chrono::seconds(30));
  }
  std::cout << "removed " << expired.size() << " expired container(s)\n";
  std::cout << "removed " << collect_pool_garbage(engine) << " idle warm container(s)\n";
  auto store = audit::Store::open({policy.effective_audit_db()});
  std::cout << "marked " << store.mark_abandoned_runs() << " abandoned run(s)\n";
  // A decision whose PostToolUse never came is sealed into the chain after an hour.
  std::cout << "sealed " << store.seal_pending_decisions(std::chrono::hours(1))
            << " pending decision(s)\n";
  store.checkpoint();  // fold the WAL into the database file, so a plain copy is complete
  return exit_code::k_ok;
}

int policy_main(const std::vector<std::string>& args) {
  std::string what = args.empty() ? "show" : args.front();
  if (what == "keys") {
    for (const auto& key : policy_keys()) {
      std::cout << key.name
                << " (default: " << (key.default_value.empty() ? "-" : key.default_value)
                << (key.workspace_may_tighten ? "; a workspace may tighten it" : "") << ")\n    "
                << key.help << "\n";
    }
    return exit_code::k_ok;
  }
  if (what != "show") {
    throw Fatal("usage: sandshim policy show|keys", exit_code::k_usage);
  }
  Policy policy = policy_here();
  for (const auto& key : policy_keys()) {
    if (key.name == "images.COMMAND") {
      continue;
    }
    auto origin = policy.origins.find(key.name);
    std::cout << key.name << " = " << render_value(policy, key.name) << "    # "
              << (origin == policy.origins.end() ? "default" : origin->second.describe()) << "\n";
  }
  for (const auto& [command, image] : policy.images) {
    auto origin = policy.origins.find("images." + command);
    std::cout << "images." << command << " = " << image << "    # "
              << (origin == policy.origins.end() ? "default" : origin->second.describe()) << "\n";
  }
  return exit_code::k_ok;
}

namespace {

const char* const k_pool_usage = R"(sandshim pool status|fill COMMAND|drain

Warm mode (pool.size = N in a config file): up to N containers per image, workspace and
policy are started in advance with the same confinement and wait idle; a run claims one, runs
in it with its own cwd, user, environment and stdin, and the container is removed afterwards.

  status          list the idle warm containers of your pools
  fill COMMAND    start warm containers for COMMAND's image in this workspace now
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

int pool_main(const std::vector<std::string>& args) {
  po::options_description options("Options");
  po::positional_options_description positional;
  positional.add("words", -1);
  options.add_options()("words", po::value<std::vector<std::string>>(), "");
  po::variables_map vm;
  if (!parse_subcommand_options(args, options, vm, k_pool_usage, &positional)) {
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
    return fill_pool({"pool", {words[1]}, {}, false});
  }
  throw Fatal("usage: " + std::string(k_pool_usage).substr(0, std::string(k_pool_usage).find('\n')),
              exit_code::k_usage);
}

}  // namespace sandshim::shim
