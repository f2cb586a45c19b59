#include "cli/dispatch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "audit/commands.hpp"
#include "audit/log.hpp"
#include "broker/client.hpp"
#include "broker/commands.hpp"
#include "broker/settings.hpp"
#include "cli/completion.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/memory.hpp"
#include "common/strings.hpp"
#include "common/terminal.hpp"
#include "hooks/agents/agent.hpp"
#include "hooks/commands.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/sandbox_shell.hpp"
#include "install/agent_install.hpp"
#include "install/doctor.hpp"
#include "install/git_hooks.hpp"
#include "install/shim_links.hpp"
#include "install/skill.hpp"
#include "policy/policy.hpp"
#include "shim/commands.hpp"

extern char** environ;

namespace sandshim::cli {

namespace {

using Args = std::vector<std::string>;

// A top-level command: how it runs, and its documentation (itself first, then the commands
// below it), which --help, the completions and the man page all read.
struct Subcommand {
  const char* name;
  std::function<int(const Args&)> run;
  std::function<std::vector<CommandDoc>()> docs;
};

template <CommandDoc (*... doc)()>
std::vector<CommandDoc> docs_of() {
  return {doc()...};
}

CommandDoc version_doc() {
  return make_command_doc("version", "print the version", "sandshim version",
                          boost::program_options::options_description("Options"));
}

int version_main(const Args& args) {
  boost::program_options::variables_map vm;
  if (!parse_subcommand_options(args, version_doc(), vm)) {
    return exit_code::k_ok;
  }
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

int show_audit(const Args& args, const audit::AuditContext& context) {
  return audit::audit_main(args, context, std::cout, ::isatty(STDOUT_FILENO) == 1,
                           terminal::use_color(STDOUT_FILENO));
}

// The audit stays readable when the policy is broken: fall back to the default database.
int audit_command(const Args& args) {
  audit::AuditContext context;
  try {
    shim::Policy policy = shim::load_policy({});
    context.configured_db = policy.effective_audit_db();
    context.key_file = policy.audit_key_file;
    context.anchor_file = policy.audit_anchor_file;
  } catch (const Fatal& e) {
    std::cerr << "sandshim: warning: " << e.what() << "; using the default audit database\n";
    context.configured_db = shim::Policy{}.effective_audit_db();
  }
  return show_audit(args, context);
}

// `sandshim run`: the broker runs it when one answers; else it runs directly. agent_command:
// broker::RunCall::agent_command.
int run_linked(const Args& args, std::string agent_command) {
  if (auto code = broker::run_through_broker(
          [&] { return broker::run_request_for("run", args, std::move(agent_command)); })) {
    return *code;
  }
  return shim::run_main(args);
}

int run_command(const Args& args) {
  return run_linked(args, "");
}

// Reading exports or writing a feed names the caller's own files: never the broker's work.
int audit_through_broker(const Args& args) {
  if (audit::runs_as_caller(args)) {
    return audit_command(args);
  }
  if (auto code = broker::run_through_broker([&] { return broker::audit_request_for(args); })) {
    return *code;
  }
  return audit_command(args);
}

// In broker mode the hook's decisions go to the broker, which adds the caller's uid; without a
// broker (not required) the hook writes its own store.
void record_through_broker(hooks::HookEnvironment& env) {
  env.audit_required = broker::client_settings().mode == broker::BrokerMode::required;
  env.record_decision = [direct = env.record_decision](const shim::Policy& policy,
                                                       const audit::DecisionRecord& record) {
    auto id = broker::record_decision_through_broker(record);
    return id ? *id : direct(policy, record);
  };
  env.complete_decision = [direct = env.complete_decision](
                              const shim::Policy& policy, const std::string& tool_use_id,
                              const audit::DecisionCompletion& completion) {
    auto done = broker::complete_decision_through_broker(tool_use_id, completion);
    return done ? *done : direct(policy, tool_use_id, completion);
  };
  env.close_session = [direct = env.close_session](const shim::Policy& policy,
                                                   const std::string& agent,
                                                   const std::string& session_id) {
    auto closed = broker::close_session_through_broker(agent, session_id);
    return closed ? *closed : direct(policy, agent, session_id);
  };
}

// `sandshim hook` always runs here, as the caller: its answer, the session's env file, the shim
// directory and program lookup are the caller's own; only its audit writes go to a broker.
int hook_command(const Args& args) {
  return hooks::hook_main(args, record_through_broker);
}

int broker_command(const Args& args) {
  return broker::broker_main(args);
}

Args environment_entries() {
  Args entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    entries.emplace_back(*entry);
  }
  return entries;
}

// `sandshim -c SCRIPT`: a shell whose every command runs in the wrap image, for an agent that
// runs its commands through a shell prefix (Claude Code's CLAUDE_CODE_SHELL_PREFIX, which
// `sandshim install agent claude --mode wrap` sets). The runs name the agent's session.
int sandbox_shell_main(const Args& args) {
  if (args.size() != 2) {
    throw Fatal("usage: sandshim -c SCRIPT (SCRIPT runs with bash in " +
                    std::string(hooks::k_wrap_image) + "; nothing of it runs on the host)",
                exit_code::k_usage);
  }
  hooks::SandboxShellRun run = hooks::sandbox_shell_run(args[1], environment_entries());
  for (const auto& [name, value] : run.link) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  return run_linked(run.run_args, run.agent_command);
}

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {"run", run_command, docs_of<shim::run_doc>},
      {"install", install_main,
       docs_of<install::install_shims_doc, install::install_agent_doc, install::git_hooks_doc>},
      {"uninstall", install::uninstall_shims_main, docs_of<install::uninstall_shims_doc>},
      {"env", install::env_main, docs_of<install::env_doc>},
      {"images", shim::images_main, docs_of<shim::images_doc, shim::images_build_doc>},
      {"gc", shim::gc_main, docs_of<shim::gc_doc>},
      {"pool", shim::pool_main, docs_of<shim::pool_doc>},
      {"audit", audit_through_broker, audit::command_docs},
      {"hook", hook_command, docs_of<hooks::hook_doc>},
      {"broker", broker_command, docs_of<broker::broker_doc>},
      {"policy", shim::policy_main, docs_of<shim::policy_doc, shim::policy_k8s_doc>},
      {"doctor", install::doctor_main, docs_of<install::doctor_doc>},
      {"version", version_main, docs_of<version_doc>},
  };
  return table;
}

std::string usage_text() {
  std::string text =
      "usage: sandshim COMMAND [ARGS...]\n\n"
      "sandshim runs python, node and sh from AI coding agents in hardened single-use\n"
      "containers. Installed ahead of those names on PATH (`sandshim install`, then\n"
      "eval \"$(sandshim env)\"), every call is rerouted into a container with no network,\n"
      "no capabilities, a read-only root and workspace, and a deadline, and recorded in an\n"
      "audit database.\n\nCommands:\n";
  for (const auto& command : subcommands()) {
    text += "  " + std::string(command.name) +
            std::string(12 - std::string(command.name).size(), ' ') +
            command.docs().front().summary + "\n";
  }
  return text +
         "  -c SCRIPT   run SCRIPT with bash in the wrap image (an agent's shell prefix)\n"
         "\nRun `sandshim COMMAND --help` for the options of each.\n";
}

void print_usage(std::ostream& out) {
  out << usage_text();
}

// The built-in policy, before any config file: what the installed defaults describe.
shim::Policy default_policy() {
  shim::Policy policy;
  policy.images = shim::default_images();
  return policy;
}

// Hidden flags the build runs to write the files it installs, from the same tables as --help.
struct Generator {
  const char* flag;
  size_t operands;
  std::function<std::string(const Args&)> text;
};

const std::vector<Generator>& generators() {
  static const std::vector<Generator> table = {
      {"--generate-man", 0, [](const Args&) { return man_page(command_docs(), SANDSHIM_VERSION); }},
      {"--generate-completion", 1,
       [](const Args& args) { return completion_script(args[1], command_docs()); }},
      {"--generate-config", 0, [](const Args&) { return config_template(); }},
      {"--generate-config-doc", 0, [](const Args&) { return config_reference(); }},
      {"--generate-skill", 0,
       [](const Args&) { return install::skill_markdown(default_policy()); }},
  };
  return table;
}

int generate_main(const Args& args) {
  for (const auto& generator : generators()) {
    if (args.front() == generator.flag && args.size() == generator.operands + 1) {
      std::cout << generator.text(args);
      return exit_code::k_ok;
    }
  }
  throw Fatal("unknown or incomplete " + quoted(args.front()) +
                  ": use --generate-completion bash|zsh|fish, --generate-man, "
                  "--generate-config, --generate-config-doc or --generate-skill",
              exit_code::k_usage);
}

int tool_main(const Args& args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h" || args.front() == "help") {
    print_usage(std::cout);
    return args.empty() ? exit_code::k_usage : exit_code::k_ok;
  }
  if (args.front() == "--version") {
    return version_main({});
  }
  if (args.front() == "-c") {
    return sandbox_shell_main(args);
  }
  if (args.front().starts_with("--generate-")) {
    return generate_main(args);
  }
  for (const auto& command : subcommands()) {
    if (args.front() == command.name) {
      return command.run(Args(args.begin() + 1, args.end()));
    }
  }
  print_usage(std::cerr);
  throw Fatal(
      "unknown command " + quoted(args.front()) + "; see the list above or `sandshim --help`",
      exit_code::k_usage);
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
  audit::set_line_safe_pattern(*logger, "sandshim: %l: %v");
  auto level = environment::log_level();
  logger->set_level(level ? spdlog::level::from_str(*level) : spdlog::level::warn);
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

// Invoked as python, node, sh…: through the broker when one answers, else in this process.
int wrapped_main(const std::string& invoked_as, const Args& args) {
  std::vector<std::string> environment = environment_entries();
  // Path mode names no tool call: a broker finds the decision of the command in its own audit,
  // direct mode in the caller's.
  std::optional<hooks::AgentShellCommand> agent_command = hooks::path_mode_command(environment);
  if (auto code = broker::run_through_broker([&] {
        return broker::run_request_for(invoked_as, args,
                                       agent_command ? agent_command->command : "");
      })) {
    return *code;
  }
  if (agent_command) {
    if (auto tool_use = hooks::path_mode_tool_use_id(*agent_command)) {
      ::setenv("SANDSHIM_TOOL_USE_ID", tool_use->c_str(), 1);
    }
  }
  return shim::shim_main(invoked_as, args);
}

}  // namespace

std::vector<CommandDoc> command_docs() {
  boost::program_options::options_description options("Options");
  options.add_options()("version", "print the version");
  std::vector<std::string> names;
  for (const auto& command : subcommands()) {
    names.emplace_back(command.name);
  }
  std::vector<CommandDoc> docs = {
      make_command_doc("", "the sandshim program", usage_text(), options, {}, names)};
  for (const auto& command : subcommands()) {
    auto more = command.docs();
    docs.insert(docs.end(), more.begin(), more.end());
  }
  return docs;
}

int main_entry(int argc, char** argv) {
  ensure_standard_fds_open();
  ::signal(SIGPIPE, SIG_IGN);
  configure_logging();
  hooks::publish_known_agents();  // before any run or policy: run/ and policy/ read the list
  PeakMemoryLog peak_memory_log;
  Args args(argv, argv + argc);
  std::string invoked_as =
      args.empty() ? "sandshim" : std::filesystem::path(args.front()).filename().string();
  try {
    if (invoked_as == "sandshim" || invoked_as.starts_with("sandshim")) {
      return tool_main(Args(args.begin() + (args.empty() ? 0 : 1), args.end()));
    }
    return wrapped_main(invoked_as, args);
  } catch (const Fatal& e) {
    std::cerr << "sandshim: " << e.what() << std::endl;
    return e.code();
  } catch (const std::exception& e) {
    std::cerr << "sandshim: internal error: " << e.what() << "; nothing ran" << std::endl;
    return exit_code::k_sandbox_error;
  }
}

#if defined(__SANITIZE_ADDRESS__)
#define SANDSHIM_EXIT_NORMALLY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDSHIM_EXIT_NORMALLY 1
#endif
#endif

void exit_now(int code) {
#ifdef SANDSHIM_EXIT_NORMALLY
  std::exit(code);
#else
  if (auto logger = spdlog::default_logger()) {
    logger->flush();
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
#endif
}

}  // namespace sandshim::cli
