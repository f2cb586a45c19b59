#include "policy/workspace.hpp"

#include <sys/stat.h>
#include <algorithm>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

fs::path resolve_workspace(const fs::path& cwd, const fs::path& home) {
  fs::path workspace = find_git_root(cwd).value_or(cwd);
  std::error_code ec;
  fs::path canonical_home = fs::weakly_canonical(home, ec);
  if (workspace == workspace.root_path()) {
    throw Fatal("refusing to mount / as the workspace: run from a project directory");
  }
  if (!ec && workspace == canonical_home) {
    throw Fatal("refusing to mount your home directory " + quoted(workspace.string()) +
                " as the workspace: run from a project directory (or `git init` one)");
  }
  return workspace;
}

namespace {

// The engine reads --mount as one CSV record: a quoted field keeps its commas and `=`.
std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"") == std::string::npos) {
    return field;
  }
  std::string result = "\"";
  for (char c : field) {
    result += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return result + "\"";
}

}  // namespace

std::string bind_mount_spec(const fs::path& path, bool read_only) {
  return bind_mount_spec(path, path, read_only);
}

BindPath checked_bind(const fs::path& source, const fs::path& target, bool read_only) {
  for (const std::string& p : {source.native(), target.native()}) {
    if (p.empty() || p[0] != '/' || has_control_characters(p)) {
      throw Fatal("refusing to mount " + quoted(p) +
                  ": the path has control characters; rename the directory");
    }
  }
  return BindPath{source, target, read_only};
}

std::string bind_mount_spec(const fs::path& source, const fs::path& target, bool read_only) {
  checked_bind(source, target, read_only);
  std::string spec = "type=bind," + csv_field("source=" + source.native()) + "," +
                     csv_field("target=" + target.native());
  return read_only ? spec + ",readonly" : spec;
}

void require_readable_by(const fs::path& workspace, uid_t uid, gid_t gid) {
  if (auto blocked = unreadable_component(workspace, uid, gid)) {
    throw Fatal("the sandbox user " + std::to_string(uid) + ":" + std::to_string(gid) +
                " cannot read the workspace " + quoted(workspace.string()) + " (stopped at " +
                quoted(*blocked) + "); make it readable, e.g. `chmod o+rx " +
                shell_quote(*blocked) + "`, or set sandbox.user");
  }
}

namespace {

// System directories exist in every image too, so naming them is not a mistake.
bool names_image_path(const fs::path& path) {
  static const char* const k_image_dirs[] = {"/dev", "/proc",  "/sys",   "/usr", "/bin", "/sbin",
                                             "/lib", "/lib32", "/lib64", "/etc", "/opt", "/var"};
  if (path == "/" || path == "/tmp") {
    return true;
  }
  for (const char* dir : k_image_dirs) {
    if (is_within(path, dir)) {
      return true;
    }
  }
  return false;
}

bool looks_like_path(const std::string& arg) {
  return arg.starts_with("/") || arg.starts_with("./") || arg.starts_with("../") || arg == "..";
}

}  // namespace

std::vector<std::string> arguments_outside_workspace(const std::vector<std::string>& argv,
                                                     const fs::path& cwd, const fs::path& workspace,
                                                     const std::vector<fs::path>& also_mounted) {
  std::vector<fs::path> mounted;
  for (const fs::path& mount : also_mounted) {
    std::error_code ec;
    mounted.push_back(fs::weakly_canonical(mount, ec));
  }
  auto in_a_mount = [&](const fs::path& path) {
    return std::any_of(mounted.begin(), mounted.end(),
                       [&](const fs::path& mount) { return is_within(path, mount); });
  };
  std::vector<std::string> outside;
  for (const auto& arg : argv) {
    if (!looks_like_path(arg) || has_control_characters(arg)) {
      continue;
    }
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(cwd / arg, ec);
    struct stat st {};
    if (ec || ::stat(resolved.c_str(), &st) != 0) {
      continue;
    }
    if (!is_within(resolved, workspace) && !names_image_path(resolved) && !in_a_mount(resolved)) {
      outside.push_back(arg);
    }
  }
  return outside;
}

}  // namespace sandshim::shim
