#include "hooks/program_files.hpp"

#include <sys/stat.h>

#include <array>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

#include "common/paths.hpp"

namespace sandshim::hooks {

namespace fs = std::filesystem;

namespace {

constexpr uintmax_t k_max_script_bytes = 1 << 20;
constexpr size_t k_script_probe_bytes = 4096;
constexpr size_t k_compared_bytes = 1 << 16;
constexpr std::string_view k_system_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Names whose files must be recognised under any other name.
constexpr std::array<std::string_view, 72> k_known_names = {
    "python",     "python2",    "python3",    "python3.6",  "python3.7",  "python3.8", "python3.9",
    "python3.10", "python3.11", "python3.12", "python3.13", "python3.14", "pypy",      "pypy3",
    "perl",       "ruby",       "irb",        "jruby",      "php",        "php8.1",    "php8.2",
    "php8.3",     "lua",        "lua5.1",     "lua5.2",     "lua5.3",     "lua5.4",    "luajit",
    "tclsh",      "tclsh8.6",   "wish",       "node",       "nodejs",     "deno",      "bun",
    "Rscript",    "R",          "pwsh",       "fish",       "csh",        "tcsh",      "sh",
    "bash",       "dash",       "zsh",        "ksh",        "mksh",       "busybox",   "docker",
    "dockerd",    "podman",     "nerdctl",    "buildah",    "ctr",        "crictl",    "runc",
    "crun",       "ld.so",      "git",        "awk",        "gawk",       "mawk",      "sed",
    "tar",        "gdb",        "vim",        "vi",         "ssh",        "socat",     "nc",
    "curl",       "env"};

// Loaders live outside PATH.
constexpr std::array<std::string_view, 5> k_loader_files = {
    "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1", "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
    "/lib/ld-musl-x86_64.so.1"};

std::string head_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(k_compared_bytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

}  // namespace

KnownPrograms::KnownPrograms(const std::string& search_path, const fs::path& sandshim) {
  struct stat own {};
  bool own_known = ::stat(sandshim.c_str(), &own) == 0;
  auto add = [&](const std::string& name, const fs::path& found) {
    struct stat info {};
    if (::stat(found.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
        (own_known && info.st_dev == own.st_dev && info.st_ino == own.st_ino)) {
      return;
    }
    m_by_inode.emplace(std::pair<uintmax_t, uintmax_t>{info.st_dev, info.st_ino}, name);
    m_by_size[static_cast<uintmax_t>(info.st_size)].push_back({name, found});
  };
  // Each PATH directory opened once and the names probed in it: walking PATH once per name cost
  // a millisecond a command.
  static const std::set<std::string_view> names(k_known_names.begin(), k_known_names.end());
  for (const auto& [name, found] :
       find_each_in_path(names, std::string(k_system_path) + ":" + search_path)) {
    add(name, found);
  }
  for (std::string_view loader : k_loader_files) {
    add("ld.so", fs::path(loader));
  }
}

std::optional<std::string> KnownPrograms::of(const fs::path& file) const {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return std::nullopt;
  }
  if (auto found = m_by_inode.find({info.st_dev, info.st_ino}); found != m_by_inode.end()) {
    return found->second;
  }
  auto same_size = m_by_size.find(static_cast<uintmax_t>(info.st_size));
  if (same_size == m_by_size.end()) {
    return std::nullopt;
  }
  std::string head = head_of(file);
  for (const Entry& entry : same_size->second) {
    if (head_of(entry.file) == head) {
      return entry.name;
    }
  }
  return std::nullopt;
}

std::optional<fs::path> locate_program(const std::string& command, const fs::path& cwd,
                                       const std::string& path_variable) {
  std::optional<fs::path> file;
  if (command.starts_with("~/")) {
    file = home_directory() / command.substr(2);
  } else if (command.find('/') != std::string::npos) {
    file = command.starts_with('/') || cwd.empty() ? fs::path(command) : cwd / command;
  } else {
    file = find_in_path(command, path_variable, nullptr);
  }
  std::error_code ec;
  fs::path canonical = file ? fs::canonical(*file, ec) : fs::path();
  if (!file || ec) {
    return std::nullopt;
  }
  return canonical;
}

std::optional<std::string> read_script_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > k_max_script_bytes || ec) {
    return std::nullopt;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  // A binary is no script: its first block decides, so `ls` costs 4 KiB, not the whole file.
  std::string text(k_script_probe_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (!text.starts_with("#!") && text.find('\0') != std::string::npos) {
    return std::nullopt;
  }
  text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return text;
}

namespace {

// Every directory from `dir` up to the owner's top (or /) is the owner's and writable by it alone.
bool directories_owned(const fs::path& dir, const SystemOwner& owner) {
  for (fs::path place = dir;; place = place.parent_path()) {
    struct stat info {};
    if (::lstat(place.c_str(), &info) != 0 || info.st_uid != owner.uid ||
        (info.st_mode & (S_IWGRP | S_IWOTH)) != 0 || !S_ISDIR(info.st_mode)) {
      return false;
    }
    if (place == owner.top || place == place.root_path()) {
      return true;
    }
  }
}

}  // namespace

bool owned_by_system(const fs::path& file, const SystemOwner& owner) {
  if (!file.is_absolute() || !is_within(file, owner.top) ||
      !directories_owned(file.parent_path(), owner)) {
    return false;
  }
  struct stat info {};
  if (::lstat(file.c_str(), &info) != 0) {
    return false;
  }
  if (S_ISLNK(info.st_mode)) {
    // A link only the owner could make (/usr/bin/python3 -> python3.11) is as much its own as
    // the file it ends at, when that file is the owner's too.
    std::error_code ec;
    fs::path target = fs::canonical(file, ec);
    return !ec && owned_by_system(target, owner);
  }
  return S_ISREG(info.st_mode) && info.st_uid == owner.uid &&
         (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace sandshim::hooks
