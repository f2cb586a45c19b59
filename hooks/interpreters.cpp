#include "hooks/interpreters.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace sandshim::hooks {

namespace {

constexpr std::array<std::string_view, 10> k_shells = {"sh",   "bash", "dash", "zsh",  "ksh",
                                                       "mksh", "ash",  "yash", "posh", "lksh"};

// Interpreter families: the bare name, or the name followed by a version ("python3.12").
constexpr std::array<std::string_view, 16> k_interpreter_families = {
    "python", "pypy", "node", "perl", "ruby",  "php", "lua",  "luajit",
    "tclsh",  "wish", "deno", "bun",  "jruby", "irb", "fish", "Rscript"};

// Names that run code but carry no version suffix worth matching.
constexpr std::array<std::string_view, 6> k_other_interpreters = {"nodejs", "csh",       "tcsh",
                                                                  "pwsh",   "osascript", "R"};

constexpr std::array<std::string_view, 58> k_builtins = {
    ".",      ":",       "[",         "alias",    "bg",       "bind",    "break",    "builtin",
    "caller", "cd",      "command",   "compgen",  "complete", "compopt", "continue", "declare",
    "dirs",   "disown",  "echo",      "enable",   "eval",     "exec",    "exit",     "export",
    "false",  "fc",      "fg",        "getopts",  "hash",     "help",    "history",  "jobs",
    "kill",   "let",     "local",     "logout",   "mapfile",  "popd",    "printf",   "pushd",
    "pwd",    "read",    "readarray", "readonly", "return",   "set",     "shift",    "shopt",
    "source", "suspend", "test",      "times",    "trap",     "true",    "type",     "typeset",
    "ulimit", "umask"};

bool is_version_suffix(std::string_view rest) {
  return !rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front())) != 0 &&
         std::all_of(rest.begin(), rest.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.';
         });
}

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool is_shell_name(std::string_view name) {
  return contains(k_shells, name);
}

bool is_known_interpreter(std::string_view name) {
  if (contains(k_other_interpreters, name)) {
    return true;
  }
  return std::any_of(
      k_interpreter_families.begin(), k_interpreter_families.end(), [&](std::string_view family) {
        return name.starts_with(family) &&
               (name.size() == family.size() || is_version_suffix(name.substr(family.size())));
      });
}

CommandClass classify_name(std::string_view name, const NameSet& shimmed) {
  if (is_shell_name(name)) {
    return CommandClass::shell;
  }
  if (shimmed.contains(name) || is_known_interpreter(name)) {
    return CommandClass::interpreter;
  }
  return CommandClass::other;
}

std::string sandboxed_name_for(std::string_view name, const NameSet& shimmed) {
  std::string candidate(name);
  while (!candidate.empty() && !shimmed.contains(candidate)) {
    char last = candidate.back();
    if (std::isdigit(static_cast<unsigned char>(last)) == 0 && last != '.') {
      return std::string(name);
    }
    candidate.pop_back();
  }
  return candidate.empty() ? std::string(name) : candidate;
}

bool is_shell_builtin(std::string_view name) {
  return contains(k_builtins, name);
}

}  // namespace sandshim::hooks
