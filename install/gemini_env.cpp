#include "install/gemini_env.hpp"

#include <algorithm>
#include <optional>
#include <sstream>
#include <vector>

#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/rewrite.hpp"
#include "install/atomic_file.hpp"
#include "install/skill.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_bash_env_marker =
    "# sandshim: Gemini CLI's shell reads BASH_ENV first, which puts the shims first on PATH";
constexpr std::string_view k_bash_env_key = "BASH_ENV=";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) {
    text += line + "\n";
  }
  return text;
}

bool sets_bash_env(const std::string& line) {
  std::string rest = trim(line);
  if (rest.starts_with("export ")) {
    rest = trim(rest.substr(7));
  }
  return rest.starts_with(k_bash_env_key);
}

// dotenv's form: the path in double quotes when it needs them (dotenv reads no escapes there
// but \n, so a path with a quote or a newline is not written at all).
std::optional<std::string> bash_env_line(const fs::path& script) {
  std::string path = script.string();
  if (path.find_first_of("\"\n\r\\") != std::string::npos) {
    return std::nullopt;
  }
  bool plain = path.find_first_of(" #'`$") == std::string::npos;
  return std::string(k_bash_env_key) + (plain ? path : "\"" + path + "\"");
}

GeminiEnvChange kept(Change change, std::string note) {
  return {change, std::move(note)};
}

constexpr std::string_view k_path_prefix_note =
    "Gemini CLI's commands get the PATH prefix instead, ";

GeminiEnvChange install_line(const GeminiEnvRequest& request,
                             const std::optional<std::string>& text, const std::string& line) {
  std::vector<std::string> lines = text ? lines_of(*text) : std::vector<std::string>{};
  for (const std::string& existing : lines) {
    if (existing == line) {
      return kept(Change::unchanged, "BASH_ENV puts the shims first on PATH");
    }
    if (sets_bash_env(existing)) {
      return kept(Change::unchanged, std::string(k_path_prefix_note) +
                                         "which your allow rules for shell commands do not "
                                         "match: this file sets BASH_ENV already");
    }
  }
  if (!text && !request.dotenv.empty() && fs::exists(request.dotenv)) {
    return kept(Change::absent, std::string(k_path_prefix_note) +
                                    "which your allow rules for shell commands do not match: a "
                                    ".gemini/.env would hide this project's own .env from "
                                    "Gemini CLI");
  }
  lines.emplace_back(k_bash_env_marker);
  lines.push_back(line);
  if (!request.dry_run) {
    write_file_atomically(gemini_bash_env_script(), gemini_bash_env_text(request.shim_dir));
    write_file_atomically(request.env_file, joined_lines(lines));
  }
  return kept(text ? Change::updated : Change::created, "BASH_ENV puts the shims first on PATH");
}

GeminiEnvChange remove_line(const GeminiEnvRequest& request, const std::optional<std::string>& text,
                            const std::string& line) {
  if (!text) {
    return kept(Change::absent, "");
  }
  std::vector<std::string> lines = lines_of(*text);
  std::vector<std::string> left;
  for (const std::string& existing : lines) {
    if (existing != line && existing != k_bash_env_marker) {
      left.push_back(existing);
    }
  }
  if (left.size() == lines.size()) {
    return kept(Change::unchanged, "");
  }
  bool empty = std::all_of(left.begin(), left.end(),
                           [](const std::string& rest) { return trim(rest).empty(); });
  if (!request.dry_run) {
    if (empty) {
      fs::remove(request.env_file);
      remove_empty_directories(request.env_file.parent_path(), 1);
    } else {
      write_file_atomically(request.env_file, joined_lines(left));
    }
  }
  return kept(empty ? Change::deleted : Change::removed, "");
}

}  // namespace

fs::path gemini_bash_env_script() {
  return xdg_directory("state") / "sandshim" / "gemini-bash-env.sh";
}

std::string gemini_bash_env_text(const fs::path& shim_dir) {
  return "# Written by `sandshim install agent gemini`: Gemini CLI's bash reads it first\n"
         "# (BASH_ENV in .gemini/.env). The shims first on PATH, once; BASH_ENV is not passed\n"
         "# on; the command bash runs is kept for a shim to find its decision (8 KiB at most).\n" +
         hooks::shims_first_lines(shim_dir) +
         "unset BASH_ENV\n"
         "if [ \"${#BASH_EXECUTION_STRING}\" -le 8192 ]; then\n"
         "  export SANDSHIM_SHELL_COMMAND=\"$BASH_EXECUTION_STRING\"\n"
         "fi\n";
}

GeminiEnvChange update_gemini_env(const GeminiEnvRequest& request) {
  std::optional<std::string> line = bash_env_line(gemini_bash_env_script());
  if (!line) {
    return kept(Change::absent, std::string(k_path_prefix_note) +
                                    "which your allow rules for shell commands do not match: "
                                    "sandshim's state directory has a quote or a backslash in "
                                    "its path");
  }
  std::optional<std::string> text = read_file(request.env_file);
  return request.uninstall ? remove_line(request, text, *line) : install_line(request, text, *line);
}

}  // namespace sandshim::install
