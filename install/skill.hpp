#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "install/agent_settings.hpp"
#include "policy/policy.hpp"

namespace sandshim::install {

// The SKILL.md that tells an agent what runs sandboxed under this policy, what the limits are,
// how to read exit codes 124/125/137, and not to work around the sandbox. Frontmatter holds
// only Agent Skills spec keys; `name: sandshim` matches the folder it is installed in.
std::string skill_markdown(const shim::Policy& policy);

// The folders the skill goes into below a project or home: .agents/skills/sandshim (Codex,
// Cursor, Gemini CLI) and .claude/skills/sandshim (Claude Code; CLAUDE_CONFIG_DIR for --user).
std::vector<std::filesystem::path> skill_directories(const std::filesystem::path& root, bool user);

struct SkillChange {
  std::filesystem::path file;
  Change change;
  std::string note;  // why a file was left alone
};

// Writes SKILL.md into each folder; a SKILL.md sandshim did not write is left alone.
std::vector<SkillChange> install_skill(const std::vector<std::filesystem::path>& directories,
                                       const std::string& markdown, bool dry_run);

// Removes the SKILL.md files sandshim wrote, and the folders that leaves empty.
std::vector<SkillChange> remove_skill(const std::vector<std::filesystem::path>& directories,
                                      bool dry_run);

// Removes `directory` and up to `levels - 1` of its parents while they are empty.
void remove_empty_directories(std::filesystem::path directory, int levels);

}  // namespace sandshim::install
