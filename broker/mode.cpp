#include "broker/mode.hpp"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "broker/settings.hpp"
#include "broker/unix_socket.hpp"
#include "common/environment.hpp"

namespace sandshim::broker {

namespace fs = std::filesystem;

namespace {

// The local engine socket this uid would use in direct mode.
fs::path engine_socket() {
  if (auto host = environment::docker_host()) {
    std::string endpoint = *host;
    if (endpoint.starts_with("unix://")) {
      return endpoint.substr(7);
    }
  }
  return "/var/run/docker.sock";
}

ModeReport direct_mode(const ClientSettings& settings) {
  std::string why = settings.mode == BrokerMode::off
                        ? "direct mode (broker.mode = off in " + settings.source + ")"
                        : "direct mode (no broker answers at " + settings.socket.string() + ")";
  fs::path socket = engine_socket();
  struct stat st {};
  bool rootful = ::stat(socket.c_str(), &st) == 0 && st.st_uid == 0;
  if (rootful && connect_unix(socket)) {
    return {ModeReport::Level::warn,
            why + ": this uid reaches the rootful engine socket " + socket.string() +
                ", which is root-equivalent (an agent could `docker run -v /:/host`)",
            "install/setup.sh (or the package's sandshim.socket) starts the broker; then take "
            "users out of the engine's group"};
  }
  return {ModeReport::Level::ok, why + "; this uid does not reach a rootful engine socket", ""};
}

bool in_group(gid_t gid) {
  if (::getegid() == gid) {
    return true;
  }
  std::vector<gid_t> groups(static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
  int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
  return std::find(groups.begin(), groups.begin() + std::max(n, 0), gid) != groups.end();
}

std::string group_name(gid_t gid) {
  const group* gr = ::getgrgid(gid);
  return gr != nullptr ? gr->gr_name : std::to_string(gid);
}

}  // namespace

std::vector<std::string> engine_access() {
  std::vector<std::string> ways;
  const group* docker = ::getgrnam("docker");
  if (docker != nullptr && in_group(docker->gr_gid)) {
    ways.push_back("is a member of the group docker");
  }
  fs::path socket = engine_socket();
  struct stat st {};
  if (::stat(socket.c_str(), &st) != 0) {
    return ways;
  }
  if ((docker == nullptr || st.st_gid != docker->gr_gid) && in_group(st.st_gid)) {
    ways.push_back("is a member of the group " + group_name(st.st_gid) + " of " + socket.string());
  }
  if (::access(socket.c_str(), R_OK | W_OK) == 0) {
    ways.push_back("may read and write " + socket.string());
  }
  return ways;
}

ModeReport unreadable_settings_report(const std::string& why) {
  return {ModeReport::Level::fail, why, "fix broker.mode in " + std::string(k_system_config)};
}

ModeReport mode_report(const ClientSettings& settings, bool broker_answers) {
  if (settings.mode != BrokerMode::off && broker_answers) {
    return {ModeReport::Level::ok,
            "broker mode: the broker at " + settings.socket.string() +
                " runs every request (its engine, policy and audit); mode " +
                describe(settings.mode) + " from " + settings.source,
            ""};
  }
  if (settings.mode == BrokerMode::required) {
    return {ModeReport::Level::fail,
            "broker.mode = required (" + settings.source + ") but no broker answers at " +
                settings.socket.string() + ": every run fails closed",
            "systemctl start sandshim.socket, or install/setup.sh"};
  }
  return direct_mode(settings);
}

}  // namespace sandshim::broker
