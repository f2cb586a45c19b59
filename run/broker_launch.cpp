#include "run/broker_launch.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "inside/launch_protocol.hpp"
#include "policy/workspace.hpp"

namespace sandshim::shim {

namespace {

namespace fs = std::filesystem;

constexpr long k_tmpfs_magic = 0x01021994;
constexpr auto k_run_dir_mode = fs::perms::owner_all | fs::perms::group_write |
                                fs::perms::group_exec | fs::perms::others_write |
                                fs::perms::others_exec | fs::perms::sticky_bit;  // 1733

std::optional<fs::path>& root_slot() {
  static std::optional<fs::path> root;
  return root;
}

fs::path run_dir(const std::string& run_id) {
  return *root_slot() / run_id;
}

// The parent of `pid` from /proc/PID/stat (readable by every user), 0 when it is gone.
int64_t parent_of(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t end_of_name = stat.rfind(')');
  if (end_of_name == std::string::npos) {
    return 0;
  }
  std::istringstream fields(stat.substr(end_of_name + 1));
  std::string state;
  int64_t parent = 0;
  fields >> state >> parent;
  return parent;
}

// The caller's processes run as the container's uid, so they can replace the socket through
// /proc/PID/root and read the token from the init's environment: the kernel's word on who
// listens decides. The launcher is the container's init (its pid) or that init's child.
std::string listener_failure(int fd, int64_t launcher_pid) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
    return std::string("could not be identified (SO_PEERCRED: ") + std::strerror(errno) + ")";
  }
  if (peer.pid == launcher_pid || (peer.pid > 0 && parent_of(peer.pid) == launcher_pid)) {
    return "";
  }
  return "answered from process " + std::to_string(peer.pid) +
         ", which is not the container's launcher";
}

}  // namespace

std::string serve_launchers_in(const fs::path& root) {
  root_slot().reset();
  std::error_code ec;
  fs::create_directories(root, ec);
  struct stat st {};
  struct statfs fs_info {};
  if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return quoted(root.string()) + " is not a directory of this user's";
  }
  if (::statfs(root.c_str(), &fs_info) != 0 || fs_info.f_type != k_tmpfs_magic) {
    return quoted(root.string()) + " is not on a tmpfs (what a container writes there would " +
           "reach the disk)";
  }
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) {
    return "cannot make " + quoted(root.string()) + " private: " + ec.message();
  }
  root_slot() = root;
  std::vector<std::string> left;  // by a previous broker
  for (const auto& item : fs::directory_iterator(root, ec)) {
    left.push_back(item.path().filename().string());
  }
  for (const auto& name : left) {
    remove_broker_launch_dir(name);
  }
  return "";
}

std::optional<fs::path> broker_launch_root() {
  return root_slot();
}

bool uses_broker_launch(const RunSpec& spec) {
  return spec.gate.has_value() && root_slot().has_value();
}

std::vector<std::string> broker_launch_flags(const std::string& run_id) {
  fs::path dir = run_dir(run_id);
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (!ec) {
    fs::permissions(dir, k_run_dir_mode, fs::perm_options::replace, ec);
  }
  if (ec) {
    spdlog::warn("cannot make the launcher's directory {}: {}", quoted(dir.string()), ec.message());
    return {};
  }
  return {"--mount=" + bind_mount_spec(dir, launch::k_broker_dir_in_container, false),
          std::string("--env=") + launch::k_socket_variable + "=" +
              launch::k_broker_socket_in_container,
          std::string("--env=") + launch::k_admit_variable + "=" + std::to_string(::geteuid())};
}

void remove_broker_launch_dir(const std::string& run_id) {
  if (!root_slot() || run_id.empty()) {
    return;
  }
  fs::path dir = run_dir(run_id);
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);  // closed first
  fs::remove_all(dir, ec);
}

std::string launcher_socket_of(const RunSpec& spec, int64_t pid) {
  if (!uses_broker_launch(spec)) {
    return launcher_socket_path(pid);
  }
  return (run_dir(spec.run_id) / fs::path(launch::k_broker_socket_in_container).filename())
      .string();
}

LauncherLink connect_claimed_launcher(const RunSpec& spec) {
  if (!uses_broker_launch(spec)) {
    return connect_launcher(spec.launcher_pid, spec.launcher_token);
  }
  std::string socket = launcher_socket_of(spec, spec.launcher_pid);
  LauncherLink link = connect_launcher_at(socket, spec.launcher_token);
  if (link.socket.valid()) {
    std::string failure = listener_failure(link.socket.get(), spec.launcher_pid);
    if (!failure.empty()) {
      link.socket.reset();
      link.failure = "at " + quoted(socket) + " " + failure;
    }
  }
  remove_broker_launch_dir(spec.run_id);  // the launcher took its socket away on accepting
  return link;
}

}  // namespace sandshim::shim
