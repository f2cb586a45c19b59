#include "cli/dispatch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "audit/commands.hpp"
#include "common/error.hpp"
#include "common/memory.hpp"
#include "common/strings.hpp"
#include "hooks/commands.hpp"
#include "install/agent_install.hpp"
#include "install/git_hooks.hpp"
#include "install/shim_links.hpp"
#include "shim/commands.hpp"
#include "shim/policy.hpp"

namespace sandshim::cli {

namespace {

using Args = std::vector<std::string>;

struct Subcommand {
  const char* name;
  const char* summary;
  std::function<int(const Args&)> run;
};

int version_main(const Args& /*args*/) {
  std::cout << "sandshim " << SANDSHIM_VERSION << "\n";
  return exit_code::k_ok;
}

int install_main(const Args& args) {
  if (!args.empty() && args.front() == "agent") {
    return install::install_agent_main(Args(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args.front() == "git-hooks") {
    return install::install_git_hooks_main(Args(args.begin() + 1, args.end()));
  }
  return install::install_shims_main(args);
}

// The audit stays readable when the policy is broken: fall back to the default database.
int audit_command(const Args& args) {
  std::filesystem::path db;
  try {
    db = shim::load_policy({}).effective_audit_db();
  } catch (const Fatal& e) {
    std::cerr << "sandshim: warning: " << e.what() << "; using the default audit database\n";
    db = shim::Policy{}.effective_audit_db();
  }
  return audit::audit_main(args, db);
}

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {"run", "run a command in a hardened single-use container", shim::run_main},
      {"install", "install the shims (or: install agent NAME, install git-hooks)", install_main},
      {"uninstall", "remove the shims", install::uninstall_shims_main},
      {"env", "print the shell line that puts the shims first on PATH", install::env_main},
      {"images", "list the images the policy expects; `images build` builds them",
       shim::images_main},
      {"gc", "remove expired sandshim containers, mark abandoned audit rows", shim::gc_main},
      {"audit", "query and verify the audit database", audit_command},
      {"hook", "answer an agent's pre-tool hook (reads JSON on stdin)", hooks::hook_main},
      {"policy", "show the effective policy (`policy show`) or its keys (`policy keys`)",
       shim::policy_main},
      {"version", "print the version", version_main},
  };
  return table;
}

void print_usage(std::ostream& out) {
  out << "usage: sandshim COMMAND [ARGS...]\n\n"
         "sandshim runs python, node and sh from AI coding agents in hardened single-use\n"
         "containers. Installed ahead of those names on PATH (`sandshim install`, then\n"
         "eval \"$(sandshim env)\"), every call is rerouted into a container with no network,\n"
         "no capabilities, a read-only root and workspace, and a deadline, and recorded in an\n"
         "audit database.\n\nCommands:\n";
  for (const auto& command : subcommands()) {
    out << "  " << command.name << std::string(12 - std::string(command.name).size(), ' ')
        << command.summary << "\n";
  }
  out << "\nRun `sandshim COMMAND --help` for the options of each.\n";
}

int tool_main(const Args& args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h" || args.front() == "help") {
    print_usage(std::cout);
    return args.empty() ? exit_code::k_usage : exit_code::k_ok;
  }
  if (args.front() == "--version") {
    return version_main({});
  }
  for (const auto& command : subcommands()) {
    if (args.front() == command.name) {
      return command.run(Args(args.begin() + 1, args.end()));
    }
  }
  print_usage(std::cerr);
  throw Fatal("unknown command " + quoted(args.front()), exit_code::k_usage);
}

// A closed stdin/stdout/stderr would be reused by the next open() and mix streams.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) {
      int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0 && null_fd != fd) {
        ::dup2(null_fd, fd);
        ::close(null_fd);
      }
    }
  }
}

// Logs go to stderr (stdout belongs to the wrapped program or the hook protocol); terse by
// default, detailed with SANDSHIM_LOG=debug.
void configure_logging() {
  auto logger = spdlog::stderr_logger_st("sandshim");
  logger->set_pattern("sandshim: %l: %v");
  const char* level = std::getenv("SANDSHIM_LOG");
  logger->set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

// Logs the process's peak memory when it ends (SANDSHIM_LOG=debug); bench/latency.sh reads it.
class PeakMemoryLog {
 public:
  PeakMemoryLog() = default;
  PeakMemoryLog(const PeakMemoryLog&) = delete;
  PeakMemoryLog& operator=(const PeakMemoryLog&) = delete;
  ~PeakMemoryLog() {
    if (spdlog::should_log(spdlog::level::debug)) {
      if (auto kib = peak_rss_kib()) {
        spdlog::debug("peak RSS {} KiB", *kib);
      }
    }
  }
};

}  // namespace

int main_entry(int argc, char** argv) {
  ensure_standard_fds_open();
  ::signal(SIGPIPE, SIG_IGN);
  configure_logging();
  PeakMemoryLog peak_memory_log;
  Args args(argv, argv + argc);
  std::string invoked_as =
      args.empty() ? "sandshim" : std::filesystem::path(args.front()).filename().string();
  try {
    if (invoked_as == "sandshim" || invoked_as.starts_with("sandshim")) {
      return tool_main(Args(args.begin() + (args.empty() ? 0 : 1), args.end()));
    }
    return shim::shim_main(invoked_as, args);
  } catch (const Fatal& e) {
    std::cerr << "sandshim: " << e.what() << std::endl;
    return e.code();
  } catch (const std::exception& e) {
    std::cerr << "sandshim: internal error: " << e.what() << "; nothing ran" << std::endl;
    return exit_code::k_sandbox_error;
  }
}

}  // namespace sandshim::cli
