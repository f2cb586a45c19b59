#include "install/skill.hpp"

#include <cstdlib>

#include "common/environment.hpp"
#include "common/strings.hpp"
#include "install/atomic_file.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;

namespace {

// Marks the files sandshim may update and remove; anything else in that folder is the user's.
constexpr std::string_view k_marker =
    "<!-- written by `sandshim install agent`; `sandshim install agent NAME --uninstall` removes "
    "it -->";

std::string shimmed_names(const shim::Policy& policy) {
  std::vector<std::string> names;
  for (const auto& [name, image] : policy.images) {
    names.push_back("`" + name + "`");
  }
  return names.empty() ? "no interpreter" : join(names, ", ");
}

std::string frontmatter() {
  return "---\n"
         "name: sandshim\n"
         "description: Explains how shell commands run under sandshim, which runs python, node "
         "and sh in hardened single-use containers and refuses ways around them. Use before "
         "running Python, Node or shell scripts, when a command is refused by a sandshim hook, "
         "or when a command fails with exit code 124, 125 or 137.\n"
         "compatibility: Requires the sandshim hook and a Docker or Podman engine on the host.\n"
         "---\n";
}

std::string how_commands_run(const shim::Policy& policy) {
  std::string names = shimmed_names(policy);
  if (policy.hook_mode == shim::HookMode::wrap) {
    return "Every shell command you run executes inside a hardened, single-use container "
           "(sandshim), not on the host.\n";
  }
  if (policy.hook_mode == shim::HookMode::deny) {
    return "Interpreters (" + names +
           ") may only run inside sandshim's hardened, single-use "
           "containers: run them as `sandshim run -- python3 script.py`. Everything else runs on "
           "the host as usual.\n";
  }
  return names +
         " called by name run inside a hardened, single-use container (sandshim); "
         "everything else (git, make, ls, compilers) runs on the host as usual. A hook checks "
         "each shell command before it runs.\n";
}

std::string workspace_words(shim::WorkspaceMode mode) {
  switch (mode) {
    case shim::WorkspaceMode::rw:
      return "read-write";
    case shim::WorkspaceMode::wrap:
      return "read-write for a whole shell command in wrap mode, read-only for python, node "
             "and sh";
    case shim::WorkspaceMode::ro:
      break;
  }
  return "read-only";
}

std::string limits(const shim::Policy& policy) {
  return "## Limits inside the sandbox\n\n"
         "- " +
         policy.limits_summary() +
         "\n"
         "- Network: " +
         (policy.network == shim::Network::none ? "none (no downloads, no package installs)"
                                                : shim::to_string(policy.network)) +
         "\n"
         "- Workspace: mounted " +
         workspace_words(policy.workspace_mode) +
         "; /tmp is small and not executable.\n"
         "- No root, no capabilities, a read-only system; the container is gone after the "
         "command.\n";
}

std::string failures(const shim::Policy& policy) {
  return "## Reading failures\n\n"
         "- 124: the command hit the time limit (" +
         format_duration_ms(policy.timeout_ms) +
         "). Make "
         "it faster or split the work; rerunning it unchanged fails again.\n"
         "- 137: the command was killed, usually at the memory limit (" +
         format_byte_size(policy.memory_bytes) +
         "). Use less memory: stream, use smaller inputs.\n"
         "- 125: sandshim or the container engine failed before the command ran; its message "
         "says why. Tell the user; retrying does not help.\n"
         "- 126 / 127: the program cannot run, or is not installed in the sandbox's image.\n"
         "- Name resolution or connection errors: there is no network in the sandbox.\n"
         "- Read-only file system: the workspace is not writable from the sandbox.\n";
}

std::string no_bypass() {
  return "## Do not work around the sandbox\n\n"
         "A refused command comes with the command to run instead: run that. Do not\n"
         "- call interpreters by path (`/usr/bin/python3`, `./venv/bin/python`): call them by "
         "name;\n"
         "- replace or unset PATH, use `env -i`, `command -p`, `exec -a` or `sudo`, or set "
         "SANDSHIM_*, DOCKER_*, LD_PRELOAD, HOME or XDG_* variables;\n"
         "- hide commands in `eval`, or run scripts whose `#!` line names an interpreter by path: "
         "run them as `python3 path/to/script`;\n"
         "- use launchers that start their own interpreter (`uv run`, `poetry run`): use "
         "`python3 -m MODULE`.\n\n"
         "If the task needs something the sandbox does not allow (network, writing the "
         "workspace, more memory or time), stop and ask the user: the policy is theirs to "
         "change. Every run and every hook decision is recorded in an audit database the user "
         "reads with `sandshim audit`.\n";
}

bool written_by_sandshim(const std::string& text) {
  return text.find(k_marker) != std::string::npos;
}

SkillChange install_one(const fs::path& directory, const std::string& markdown, bool dry_run) {
  fs::path file = directory / "SKILL.md";
  std::optional<std::string> existing = read_file(file);
  if (existing && !written_by_sandshim(*existing)) {
    return {file, Change::unchanged, "not written by sandshim; left alone"};
  }
  if (existing == markdown) {
    return {file, Change::unchanged, ""};
  }
  if (!dry_run) {
    write_file_atomically(file, markdown);
  }
  return {file, existing ? Change::updated : Change::created, ""};
}

SkillChange remove_one(const fs::path& directory, bool dry_run) {
  fs::path file = directory / "SKILL.md";
  std::optional<std::string> existing = read_file(file);
  if (!existing) {
    return {file, Change::absent, ""};
  }
  if (!written_by_sandshim(*existing)) {
    return {file, Change::unchanged, "not written by sandshim; left alone"};
  }
  if (!dry_run) {
    std::error_code ec;
    fs::remove(file, ec);
    remove_empty_directories(directory, 3);
  }
  return {file, Change::deleted, ""};
}

}  // namespace

// The skills/ and .agents/ folders an install created go with it; a folder holding anything
// else stays.
void remove_empty_directories(fs::path directory, int levels) {
  std::error_code ec;
  for (int i = 0; i < levels && fs::is_empty(directory, ec) && fs::remove(directory, ec); ++i) {
    directory = directory.parent_path();
  }
}

std::string skill_markdown(const shim::Policy& policy) {
  return frontmatter() + "\n# Interpreters run in a sandbox\n\n" + std::string(k_marker) + "\n\n" +
         how_commands_run(policy) + "\n" + limits(policy) + "\n" + failures(policy) + "\n" +
         no_bypass();
}

std::vector<fs::path> skill_directories(const fs::path& root, bool user) {
  fs::path claude = root / ".claude";
  if (std::optional<fs::path> dir = environment::absolute("CLAUDE_CONFIG_DIR"); user && dir) {
    claude = *dir;
  }
  return {root / ".agents" / "skills" / "sandshim", claude / "skills" / "sandshim"};
}

std::vector<SkillChange> install_skill(const std::vector<fs::path>& directories,
                                       const std::string& markdown, bool dry_run) {
  std::vector<SkillChange> changes;
  for (const fs::path& directory : directories) {
    changes.push_back(install_one(directory, markdown, dry_run));
  }
  return changes;
}

std::vector<SkillChange> remove_skill(const std::vector<fs::path>& directories, bool dry_run) {
  std::vector<SkillChange> changes;
  for (const fs::path& directory : directories) {
    changes.push_back(remove_one(directory, dry_run));
  }
  return changes;
}

}  // namespace sandshim::install
