#include "hooks/rewrite.hpp"

#include <algorithm>
#include <array>

#include "common/strings.hpp"

namespace sandshim::hooks {

namespace {

constexpr std::array<std::string_view, 3> k_link_variables = {
    "SANDSHIM_AGENT", "SANDSHIM_SESSION_ID", "SANDSHIM_TOOL_USE_ID"};

std::string link_assignments(const RunLink& link) {
  const std::array<const std::string*, 3> values = {&link.agent, &link.session_id,
                                                    &link.tool_use_id};
  std::string text;
  for (size_t i = 0; i < k_link_variables.size(); ++i) {
    text += " " + std::string(k_link_variables[i]) + "=" + shell_quote(*values[i]);
  }
  return text;
}

// `PATH=<shim dir>` followed by the old PATH only when there was one: an empty entry would
// put the current directory on PATH.
std::string path_assignment(const std::filesystem::path& shim_dir) {
  return "PATH=" + shell_quote(shim_dir.string()) + "${PATH:+:\"$PATH\"}";
}

// Skips one word as shell_quote writes it (bare, or '…' with '\'' for quotes).
size_t skip_quoted_word(std::string_view text, size_t pos) {
  while (pos < text.size() && text[pos] != ' ' && text[pos] != ';') {
    if (text[pos] == '\'') {
      size_t close = text.find('\'', pos + 1);
      pos = close == std::string_view::npos ? text.size() : close + 1;
    } else {
      pos += text[pos] == '\\' ? 2 : 1;
    }
  }
  return pos;
}

// True when `word` is exactly what shell_quote writes: safe bare characters and '…' quotes
// joined by \' — nothing bash would expand.
bool is_literal_word(std::string_view word) {
  constexpr std::string_view k_safe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
  size_t i = 0;
  while (i < word.size()) {
    if (word[i] == '\'') {
      size_t close = word.find('\'', i + 1);
      if (close == std::string_view::npos) {
        return false;
      }
      i = close + 1;
    } else if (word.substr(i, 2) == "\\'") {
      i += 2;
    } else if (k_safe.find(word[i]) != std::string_view::npos) {
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string route_through_shims(std::string_view command, const std::filesystem::path& shim_dir,
                                const RunLink& link) {
  return "export " + path_assignment(shim_dir) + link_assignments(link) + "; " +
         std::string(command);
}

std::optional<std::string_view> strip_any_routing(std::string_view command) {
  constexpr std::string_view k_head = "export PATH=";
  constexpr std::string_view k_old_path = "${PATH:+:\"$PATH\"}";
  if (!command.starts_with(k_head)) {
    return std::nullopt;
  }
  size_t pos = skip_quoted_word(command, k_head.size());
  if (!command.substr(0, pos).ends_with(k_old_path)) {
    return std::nullopt;
  }
  for (std::string_view variable : k_link_variables) {
    std::string assignment = " " + std::string(variable) + "=";
    if (command.substr(pos, assignment.size()) != assignment) {
      return std::nullopt;
    }
    size_t value = pos + assignment.size();
    pos = skip_quoted_word(command, value);
    if (!is_literal_word(command.substr(value, pos - value))) {
      return std::nullopt;  // a value with an expansion in it is not a prefix sandshim wrote
    }
  }
  if (command.substr(pos, 2) != "; ") {
    return std::nullopt;
  }
  return command.substr(pos + 2);
}

namespace {

// A word the agent's parser and bash both read as itself: no quotes, nothing to expand.
bool is_plain_word(std::string_view word) {
  constexpr std::string_view k_plain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
  return !word.empty() && word.find_first_not_of(k_plain) == std::string_view::npos;
}

constexpr std::string_view k_script_join = " && ";

}  // namespace

std::optional<std::string> route_through_script(std::string_view command,
                                                const std::filesystem::path& script,
                                                const RunLink& link) {
  std::string prefix = ". " + script.string();
  for (const std::string* word : {&link.agent, &link.session_id, &link.tool_use_id}) {
    prefix += " " + (word->empty() ? std::string("-") : *word);
  }
  if (!is_plain_word(script.string()) || !is_plain_word(link.agent) ||
      (!link.session_id.empty() && !is_plain_word(link.session_id)) ||
      (!link.tool_use_id.empty() && !is_plain_word(link.tool_use_id))) {
    return std::nullopt;
  }
  return prefix + std::string(k_script_join) + std::string(command);
}

std::string shims_first_lines(const std::filesystem::path& shim_dir) {
  std::string dir = shell_quote(shim_dir.string());
  return "case \"${PATH-}\" in " + dir + " | " + dir + ":*) ;; *) PATH=" + dir +
         "${PATH:+:\"$PATH\"} ;; esac\nexport PATH\n";
}

std::string routing_script_text(const std::filesystem::path& shim_dir) {
  return "# Written by `sandshim install agent codex`. The commands sandshim's hook routes begin\n"
         "# with `. <this file> AGENT SESSION TOOL_USE &&`: the shims first on PATH (once), and\n"
         "# the run joined to the hook's decision (\"-\" for a value the agent did not give).\n" +
         shims_first_lines(shim_dir) +
         "SANDSHIM_AGENT=${1-} SANDSHIM_SESSION_ID=${2-} SANDSHIM_TOOL_USE_ID=${3-}\n"
         "[ \"$SANDSHIM_SESSION_ID\" != - ] || SANDSHIM_SESSION_ID=\n"
         "[ \"$SANDSHIM_TOOL_USE_ID\" != - ] || SANDSHIM_TOOL_USE_ID=\n"
         "export SANDSHIM_AGENT SANDSHIM_SESSION_ID SANDSHIM_TOOL_USE_ID\n";
}

std::optional<std::string_view> strip_routing(std::string_view command,
                                              const std::filesystem::path& shim_dir,
                                              const std::filesystem::path& script) {
  if (!script.empty() && command.starts_with(". " + script.string() + " ")) {
    size_t words_end = command.find(k_script_join);
    if (words_end == std::string_view::npos) {
      return std::nullopt;
    }
    std::string_view words = command.substr(0, words_end);
    size_t spaces = static_cast<size_t>(std::count(words.begin(), words.end(), ' '));
    bool plain = spaces == 4 && std::all_of(words.begin() + 2, words.end(), [](char c) {
                   return c == ' ' || is_plain_word(std::string_view(&c, 1));
                 });
    return plain ? std::optional(command.substr(words_end + k_script_join.size())) : std::nullopt;
  }
  if (!command.starts_with("export " + path_assignment(shim_dir) + " ")) {
    return std::nullopt;
  }
  return strip_any_routing(command);
}

std::string wrap_in_sandbox(std::string_view command, const std::filesystem::path& sandshim,
                            std::string_view image, const RunLink& link, ShellRole role) {
  return link_assignments(link).substr(1) + " " + shell_quote(sandshim.string()) + " run " +
         (role == ShellRole::whole_shell ? "--wrap-shell " : "") + "--image " + shell_quote(image) +
         " -- bash -c " + shell_quote(command);
}

namespace {
constexpr std::string_view k_shell_flag = " -c";
}  // namespace

std::string sandbox_shell_prefix(const std::filesystem::path& sandshim) {
  return sandshim.string() + std::string(k_shell_flag);
}

bool is_sandbox_shell_prefix(std::string_view value, const std::filesystem::path& sandshim) {
  std::string text = trim(value);
  if (!text.ends_with(k_shell_flag) || sandshim.empty()) {
    return false;
  }
  std::filesystem::path program = text.substr(0, text.size() - k_shell_flag.size());
  std::error_code ec;
  return program.is_absolute() && std::filesystem::equivalent(program, sandshim, ec);
}

}  // namespace sandshim::hooks
