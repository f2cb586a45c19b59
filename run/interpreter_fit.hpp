#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim::shim {

// What a project asks of an interpreter's version, and where it says so.
struct VersionAsk {
  std::string range;    // ">=20", "20.11"; python: ">=3.12", "==3.12.*"
  std::string source;   // "package.json (engines.node)", ".nvmrc", ".python-version"
  bool pep440 = false;  // python's grammar (PEP 440 specifiers), not npm's ranges
};

// The interpreter a version ask is about, from the name a run was called by: "node", or
// "python" (python, python3, python3.11); "" for any other.
std::string fitted_interpreter(std::string_view program);

// What the project around `cwd` asks of the interpreter `program` is called as (node's or
// python's files below), nullopt for any other program.
std::optional<VersionAsk> project_version_ask(std::string_view program,
                                              const std::filesystem::path& cwd,
                                              const std::filesystem::path& workspace);

// An ask as a broker's client sent it (data the broker read from no file), with the grammar its
// source says; nullopt unless `source` is one of the files the functions below read.
std::optional<VersionAsk> claimed_version_ask(std::string_view source, std::string_view range);

// Whether the interpreter `version` satisfies the ask; nullopt when either cannot be read.
std::optional<bool> ask_satisfied(const std::string& version, const VersionAsk& ask);

// What the project around `cwd` asks of node: the nearest directory from `cwd` up to
// `workspace` holding `.nvmrc`, `.node-version` or a package.json, in that order; of a
// package.json its engines.node or, when it declares none, the engines.node of the installed
// dependency (node_modules/NAME/package.json) that admits the newest lowest major. Each file is
// opened without following links and read up to a cap; an unreadable, oversized or unparseable
// one, or an alias such as `lts/*`, asks nothing.
std::optional<VersionAsk> node_version_ask(const std::filesystem::path& cwd,
                                           const std::filesystem::path& workspace);

// What the project around `cwd` asks of python: the nearest directory up to `workspace`
// holding `.python-version` (pyenv's: its first version; `3.12` asks for any 3.12.x, a name
// such as `system` or `pypy3.10` asks nothing) or a pyproject.toml whose [project] table sets
// requires-python, read as node's files are.
std::optional<VersionAsk> python_version_ask(const std::filesystem::path& cwd,
                                             const std::filesystem::path& workspace);

// The version of `interpreter` in one of sandshim's own images ("18.20.4": install/images.sh
// installs Debian bookworm's), or nullopt for any other image, whose contents sandshim does not
// know.
std::optional<std::string> image_interpreter_version(std::string_view image,
                                                     std::string_view interpreter);

}  // namespace sandshim::shim
