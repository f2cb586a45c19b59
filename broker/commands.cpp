#include "broker/commands.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <boost/program_options.hpp>

#include "broker/audit_keeper.hpp"
#include "broker/serve.hpp"
#include "common/command_doc.hpp"
#include "common/error.hpp"
#include "policy/broker_policy.hpp"
#include "run/broker_launch.hpp"

namespace sandshim::broker {

namespace po = boost::program_options;

namespace {

const char* const k_broker_usage = R"(sandshim broker [--socket PATH] [--max-runs-per-user N]

Runs the broker: the one process that talks to the container engine and writes the audit, so
the users who run sandboxed commands need neither. Start it as the dedicated system user
`sandshim` (a member of the engine's group, not root): the packaged systemd units
(sandshim.socket, sandshim.service) do, and so does install/setup.sh where systemd is absent.

The shims, `sandshim run` and `sandshim audit` send a typed request to the broker's socket when
it answers: the invoked name, argv, only the variables their policy lets into a sandbox,
stdin/stdout/stderr and the cwd as file descriptors; `sandshim hook` runs as the caller and
sends only its audit records. The broker identifies the caller by the socket's peer credentials
(SO_PEERCRED), never by what the client says, and serves the request in a child of its own with
the caller's identity (the container runs as the caller's uid:gid, root as 65534), the
broker's policy (/etc/sandshim/config) and the broker's audit database. Signals the client
receives are forwarded to the run; a client that disconnects is treated as killed (its
container is removed). Requests of one uid beyond --max-runs-per-user wait in that uid's own
queue, so one user's flood does not delay another's runs.

Clients: broker.mode in /etc/sandshim/config is auto (use the broker when it answers, else run
directly), required (no broker: fail with 125 and one line) or off. `sandshim doctor` says which
mode is in force.

Examples:
  sudo -u sandshim sandshim broker                      # in the foreground, log on stderr
  sandshim broker --socket /tmp/b.sock --max-runs-per-user 4
  SANDSHIM_BROKER_SOCKET=/tmp/b.sock python -c 'print(1)'   # a client of that broker)";

struct BrokerFlags {
  DaemonOptions options;
  bool allow_root = false;
};

BrokerFlags flags_of(const po::variables_map& vm) {
  BrokerFlags flags;
  flags.options.socket = vm["socket"].as<std::string>();
  flags.options.max_runs_per_user = vm["max-runs-per-user"].as<int>();
  flags.options.max_queued_per_user = vm["max-queued-per-user"].as<int>();
  flags.options.socket_mode =
      static_cast<mode_t>(std::stoul(vm["socket-mode"].as<std::string>(), nullptr, 8));
  flags.allow_root = vm.count("allow-root") != 0;
  if (flags.options.max_runs_per_user < 1 || flags.options.max_queued_per_user < 0) {
    throw Fatal("--max-runs-per-user must be at least 1 and --max-queued-per-user at least 0",
                exit_code::k_usage);
  }
  return flags;
}

// Warm containers' launchers listen in a directory of the broker's (run/broker_launch.hpp).
void serve_launchers(const std::string& flag, const std::filesystem::path& socket) {
  std::filesystem::path dir =
      flag.empty() ? socket.parent_path() / "launch" : std::filesystem::path(flag);
  std::string why_not = shim::serve_launchers_in(dir);
  if (!why_not.empty()) {
    spdlog::warn("warm runs with pool.start = launcher go through exec: {} (--launch-dir)",
                 why_not);
  }
}

}  // namespace

CommandDoc broker_doc() {
  po::options_description options("Options");
  options.add_options()("socket", po::value<std::string>()->default_value(k_default_socket),
                        "unix socket to listen on")(
      "max-runs-per-user", po::value<int>()->default_value(8),
      "requests of one uid that run at once; more wait in that uid's queue")(
      "max-queued-per-user", po::value<int>()->default_value(256),
      "requests of one uid that may wait; beyond, 125 and one line")(
      "socket-mode", po::value<std::string>()->default_value("0666"),
      "permissions of the socket (octal): who may ask for runs")(
      "system-config", po::value<std::string>()->default_value(shim::k_system_config),
      "the policy's floor (root-owned, not group/other-writable); user layers only tighten it")(
      "launch-dir", po::value<std::string>()->default_value(""),
      "a directory of the broker's on a tmpfs for warm containers' launcher sockets (default: "
      "beside the socket, DIR/launch; not on a tmpfs: warm runs use exec)")(
      "allow-root", "run as root anyway (the broker should be the sandshim user)");
  return make_command_doc("broker", "the daemon that holds the engine, policy and audit",
                          k_broker_usage, options);
}

int broker_main(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, broker_doc(), vm)) {
    return exit_code::k_ok;
  }
  BrokerFlags flags = flags_of(vm);
  if (::geteuid() == 0 && !flags.allow_root) {
    throw Fatal(
        "the broker runs as the sandshim system user, not root: "
        "`sudo -u sandshim sandshim broker` (or pass --allow-root)",
        exit_code::k_usage);
  }
  shim::serve_as_broker(vm["system-config"].as<std::string>());
  serve_launchers(vm["launch-dir"].as<std::string>(), flags.options.socket);
  if (auto db = broker_audit_db(); !db.empty()) {
    start_audit_keeper(db);
  }
  return serve(flags.options);
}

}  // namespace sandshim::broker
