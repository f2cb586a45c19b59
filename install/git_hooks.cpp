#include "install/git_hooks.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/command_doc.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "install/atomic_file.hpp"

extern char** environ;

namespace sandshim::install {

namespace fs = std::filesystem;
namespace po = boost::program_options;
// Not the ordered `Json` of the other installers: one namespace with them in a unity build.
using StateJson = nlohmann::json;

namespace {

constexpr const char* k_dispatcher_dir = "sandshim-hooks";
constexpr const char* k_state_file = ".sandshim-state.json";

const char* const k_git_hooks_usage =
    R"(sandshim install git-hooks [--repo DIR] [--uninstall] [--dry-run]

Runs this repository's git hooks inside the sandbox. Sets core.hooksPath (local config) to a
dispatcher in .git/sandshim-hooks/ that, for each hook git runs, starts the repository's own hook
(from wherever hooks lived before: .git/hooks, or the old core.hooksPath) with `sandshim run`,
under the same policy and audit as every other sandboxed run. A hook that does not exist is
skipped, as git would. The previous setting is saved, and --uninstall restores it exactly,
including "not set".

Inside the sandbox hooks see the workspace (read-only unless the policy says rw) and no
network; a hook that needs git, or writes to the repository, needs an image and policy that
allow it.

Examples:
  sandshim install git-hooks
  sandshim install git-hooks --repo ~/src/project --uninstall)";

// Runs git in the repository with this process's environment.
class Git {
 public:
  explicit Git(fs::path repo) : m_repo(std::move(repo)) {
    auto found = find_in_path("git", environment::path(), nullptr);
    if (!found) {
      throw Fatal("git not found on PATH; install it (apt-get install git)",
                  exit_code::k_not_found);
    }
    m_binary = *found;
  }

  CapturedRun run(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {m_binary.string(), "-C", m_repo.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (char** variable = environ; *variable != nullptr; ++variable) {
      env.emplace_back(*variable);
    }
    return run_captured(argv, env, std::chrono::seconds(30));
  }

  std::string output(const std::vector<std::string>& args) const {
    CapturedRun result = run(args);
    if (result.status.code != 0) {
      throw Fatal("git " + join(args, " ") + " failed: " + trim(result.err));
    }
    return trim(result.out);
  }

  // The repository's own (--local) value; nullopt when it is not set there.
  std::optional<std::string> local_config(const std::string& key) const {
    CapturedRun result = run({"config", "--local", "--get", key});
    if (result.status.code == 1) {
      return std::nullopt;
    }
    if (result.status.code != 0) {
      throw Fatal("git config --local --get " + key + " failed: " + trim(result.err));
    }
    std::string value = result.out;
    if (!value.empty() && value.back() == '\n') {
      value.pop_back();
    }
    return value;
  }

 private:
  fs::path m_repo;
  fs::path m_binary;
};

fs::path absolute_git_path(const Git& git, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"rev-parse", "--path-format=absolute"};
  full.insert(full.end(), args.begin(), args.end());
  return fs::path(git.output(full)).lexically_normal();
}

std::string dispatcher_script(const std::string& hook, const fs::path& hooks_dir,
                              const fs::path& sandshim) {
  return "#!/bin/sh\n"
         "# Written by `sandshim install git-hooks`: runs this repository's own " +
         hook +
         " hook\n"
         "# inside the sandbox. `sandshim install git-hooks --uninstall` restores core.hooksPath.\n"
         "hook=" +
         shell_quote((hooks_dir / hook).string()) +
         "\n"
         "[ -x \"$hook\" ] || exit 0\n"
         "exec " +
         shell_quote(sandshim.string()) + " run -- \"$hook\" \"$@\"\n";
}

void write_script(const fs::path& file, const std::string& text) {
  write_file_atomically(file, text);
  if (::chmod(file.c_str(), 0755) != 0) {
    throw Fatal("chmod " + quoted(file.string()) + " failed");
  }
}

struct Repository {
  Git git;
  fs::path dispatcher;
  std::optional<std::string> hooks_path;  // the local core.hooksPath now
};

Repository open_repository(const fs::path& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    throw Fatal("no such directory: " + quoted(directory.string()) +
                    "; pass the repository with --repo DIR",
                exit_code::k_usage);
  }
  Git git(directory);
  fs::path common = absolute_git_path(git, {"--git-common-dir"});
  std::optional<std::string> hooks_path = git.local_config("core.hooksPath");
  return {std::move(git), common / k_dispatcher_dir, std::move(hooks_path)};
}

bool installed(const Repository& repository) {
  return repository.hooks_path && fs::path(*repository.hooks_path) == repository.dispatcher;
}

// Writes the scripts that differ; true when one did.
bool write_dispatchers(const fs::path& dispatcher, const fs::path& hooks_dir,
                       const fs::path& sandshim, bool dry_run) {
  bool changed = false;
  for (const std::string& hook : git_hook_names()) {
    std::string text = dispatcher_script(hook, hooks_dir, sandshim);
    if (read_file(dispatcher / hook) == text) {
      continue;
    }
    changed = true;
    if (!dry_run) {
      write_script(dispatcher / hook, text);
    }
  }
  return changed;
}

StateJson read_state(const fs::path& dispatcher) {
  std::optional<std::string> text = read_file(dispatcher / k_state_file);
  StateJson state = text ? StateJson::parse(*text, nullptr, false) : StateJson();
  if (!state.is_object() || !state.contains("previous_hooks_dir")) {
    throw Fatal("the saved state in " + quoted((dispatcher / k_state_file).string()) +
                " is missing or damaged; set core.hooksPath by hand");
  }
  return state;
}

void install(const Repository& repository, const GitHooksOptions& options, std::ostream& out) {
  if (installed(repository)) {
    fs::path hooks_dir = read_state(repository.dispatcher)["previous_hooks_dir"].get<std::string>();
    bool changed =
        write_dispatchers(repository.dispatcher, hooks_dir, options.sandshim, options.dry_run);
    out << "  " << (changed ? "updated   " : "unchanged ") << repository.dispatcher.string()
        << "\n";
    return;
  }
  fs::path hooks_dir = absolute_git_path(repository.git, {"--git-path", "hooks"});
  if (hooks_dir == repository.dispatcher) {
    throw Fatal("core.hooksPath already points into sandshim's dispatcher; uninstall first");
  }
  StateJson state{{"previous_hooks_path",
                   repository.hooks_path ? StateJson(*repository.hooks_path) : StateJson()},
                  {"previous_hooks_dir", hooks_dir.string()}};
  if (!options.dry_run) {
    write_dispatchers(repository.dispatcher, hooks_dir, options.sandshim, false);
    write_file_atomically(repository.dispatcher / k_state_file, state.dump(2) + "\n");
    repository.git.output({"config", "--local", "core.hooksPath", repository.dispatcher.string()});
  }
  out << "  created   " << repository.dispatcher.string() << "  (runs the hooks of "
      << hooks_dir.string() << " in the sandbox)\n"
      << "  set       core.hooksPath = " << repository.dispatcher.string() << "  (was "
      << (repository.hooks_path ? quoted(*repository.hooks_path) : std::string("not set")) << ")\n";
}

void restore_setting(const Repository& repository, const StateJson& previous, std::ostream& out) {
  if (previous.is_string()) {
    repository.git.output({"config", "--local", "core.hooksPath", previous.get<std::string>()});
    out << "  restored  core.hooksPath = " << previous.get<std::string>() << "\n";
  } else {
    repository.git.output({"config", "--local", "--unset", "core.hooksPath"});
    out << "  restored  core.hooksPath (not set)\n";
  }
}

void uninstall(const Repository& repository, const GitHooksOptions& options, std::ostream& out) {
  std::error_code ec;
  if (!fs::exists(repository.dispatcher, ec)) {
    out << "  absent    " << repository.dispatcher.string() << "  (nothing to remove)\n";
    return;
  }
  if (installed(repository)) {
    StateJson previous = read_state(repository.dispatcher)["previous_hooks_path"];
    if (!options.dry_run) {
      restore_setting(repository, previous, out);
    }
  } else {
    out << "  kept      core.hooksPath = "
        << (repository.hooks_path ? *repository.hooks_path : std::string("(not set)"))
        << "  (it no longer points at sandshim's dispatcher)\n";
  }
  if (!options.dry_run) {
    fs::remove_all(repository.dispatcher, ec);
  }
  out << "  deleted   " << repository.dispatcher.string() << "\n";
}

}  // namespace

const std::vector<std::string>& git_hook_names() {
  static const std::vector<std::string> names = {"applypatch-msg",
                                                 "pre-applypatch",
                                                 "post-applypatch",
                                                 "pre-commit",
                                                 "pre-merge-commit",
                                                 "prepare-commit-msg",
                                                 "commit-msg",
                                                 "post-commit",
                                                 "pre-rebase",
                                                 "post-checkout",
                                                 "post-merge",
                                                 "pre-push",
                                                 "pre-receive",
                                                 "update",
                                                 "proc-receive",
                                                 "post-receive",
                                                 "post-update",
                                                 "reference-transaction",
                                                 "push-to-checkout",
                                                 "pre-auto-gc",
                                                 "post-rewrite",
                                                 "sendemail-validate",
                                                 "post-index-change",
                                                 "p4-changelist",
                                                 "p4-prepare-changelist",
                                                 "p4-post-changelist",
                                                 "p4-pre-submit"};
  return names;
}

void install_git_hooks(const GitHooksOptions& options, std::ostream& out) {
  Repository repository = open_repository(options.repo);
  out << "sandshim: git hooks, repository " << fs::canonical(options.repo).string()
      << (options.dry_run ? " (dry run: nothing written)" : "") << "\n";
  if (options.uninstall) {
    uninstall(repository, options, out);
  } else {
    install(repository, options, out);
  }
}

CommandDoc git_hooks_doc() {
  po::options_description options("Options");
  options.add_options()("repo", po::value<std::string>()->value_name("DIR"),
                        "the repository (default: the current directory)")(
      "uninstall", "restore the previous core.hooksPath")("dry-run", "show the changes only");
  return make_command_doc("install git-hooks", "run a repository's own git hooks in the sandbox",
                          k_git_hooks_usage, options);
}

int install_git_hooks_main(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, git_hooks_doc(), vm)) {
    return exit_code::k_ok;
  }
  std::error_code ec;
  GitHooksOptions parsed{
      vm.count("repo") != 0 ? fs::path(vm["repo"].as<std::string>()) : fs::current_path(ec),
      self_executable(), vm.count("uninstall") != 0, vm.count("dry-run") != 0};
  install_git_hooks(parsed, std::cout);
  return exit_code::k_ok;
}

}  // namespace sandshim::install
