#include "run/interpreter_fit.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

#include "common/io.hpp"
#include "common/pep440.hpp"
#include "common/semver.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_engines_source = "package.json (engines.node)";
constexpr std::string_view k_requires_python_source = "pyproject.toml (requires-python)";
// Every source an ask names: node's (npm's ranges), then python's (PEP 440 specifiers).
constexpr std::array<std::string_view, 3> k_node_sources = {".nvmrc", ".node-version",
                                                            k_engines_source};
constexpr std::array<std::string_view, 2> k_python_sources = {".python-version",
                                                              k_requires_python_source};

// A dependency's ask names its package.json: "node_modules/NAME/package.json (engines.node)".
constexpr std::string_view k_dependency_prefix = "node_modules/";
constexpr std::string_view k_dependency_suffix = "/package.json (engines.node)";
constexpr size_t k_max_dependencies_read = 300;

std::string dependency_source(const std::string& name) {
  return std::string(k_dependency_prefix) + name + std::string(k_dependency_suffix);
}

bool is_dependency_source(std::string_view source) {
  if (!source.starts_with(k_dependency_prefix) || !source.ends_with(k_dependency_suffix)) {
    return false;
  }
  source.remove_prefix(k_dependency_prefix.size());
  source.remove_suffix(k_dependency_suffix.size());
  return is_npm_package_name(source);
}

// A package.json of a few megabytes is a lockfile's job; past this it asks nothing.
constexpr size_t k_max_project_file_bytes = 1024 * 1024;

// The file's text when it is a regular file (not a link) within the cap.
std::optional<std::string> read_project_file(const fs::path& file) {
  return read_file_text(file.string(), {k_max_project_file_bytes, false});
}

// nvm's release-line aliases that name one major version.
std::optional<std::string> lts_major(std::string_view alias) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> k_lines = {
      {{"lts/gallium", "16"}, {"lts/hydrogen", "18"}, {"lts/iron", "20"}, {"lts/jod", "22"}}};
  for (const auto& [name, major] : k_lines) {
    if (alias == name) {
      return std::string(major);
    }
  }
  return std::nullopt;
}

// `.nvmrc` / `.node-version`: the first word of the first line that is not a comment.
std::optional<VersionAsk> version_file_ask(const fs::path& file) {
  std::optional<std::string> text = read_project_file(file);
  if (!text) {
    return std::nullopt;
  }
  for (const std::string& line : split_lines(*text)) {
    std::vector<std::string> words = split_words(line);
    if (words.empty() || words[0].starts_with('#')) {
      continue;
    }
    std::string range = lts_major(words[0]).value_or(words[0]);
    return VersionAsk{range, file.filename().string()};
  }
  return std::nullopt;
}

std::optional<nlohmann::json> package_json(const fs::path& file) {
  std::optional<std::string> text = read_project_file(file);
  if (!text) {
    return std::nullopt;
  }
  nlohmann::json package = nlohmann::json::parse(*text, nullptr, false);
  return package.is_object() ? std::optional(std::move(package)) : std::nullopt;
}

std::optional<std::string> engines_node(const nlohmann::json& package) {
  auto engines = package.find("engines");
  if (engines == package.end() || !engines->is_object()) {
    return std::nullopt;
  }
  auto node = engines->find("node");
  return node != engines->end() && node->is_string() ? std::optional(node->get<std::string>())
                                                     : std::nullopt;
}

// A project that declares no engines.node still needs what its installed dependencies ask for:
// of its dependencies and devDependencies (sorted, the first few hundred), the one whose
// engines.node admits no major below the others' (a dependency asking ">=20" of a project that
// says nothing). Names npm would not publish are not followed into node_modules.
std::optional<VersionAsk> dependencies_ask(const fs::path& dir, const nlohmann::json& package) {
  std::set<std::string> names;
  for (const char* field : {"dependencies", "devDependencies"}) {
    auto listed = package.find(field);
    if (listed == package.end() || !listed->is_object()) {
      continue;
    }
    for (const auto& entry : listed->items()) {
      if (is_npm_package_name(entry.key())) {
        names.insert(entry.key());
      }
    }
  }
  std::optional<VersionAsk> newest;
  int newest_major = -1;
  size_t read = 0;
  for (const std::string& name : names) {
    if (++read > k_max_dependencies_read) {
      break;
    }
    std::optional<nlohmann::json> dependency =
        package_json(dir / "node_modules" / name / "package.json");
    std::optional<std::string> range = dependency ? engines_node(*dependency) : std::nullopt;
    std::optional<int> major = range ? lowest_major(*range) : std::nullopt;
    if (major && *major > newest_major) {
      newest_major = *major;
      newest = VersionAsk{*range, dependency_source(name)};
    }
  }
  return newest;
}

std::optional<VersionAsk> node_ask_in(const fs::path& dir) {
  for (const char* name : {".nvmrc", ".node-version"}) {
    if (std::optional<VersionAsk> ask = version_file_ask(dir / name)) {
      return ask;
    }
  }
  std::optional<nlohmann::json> package = package_json(dir / "package.json");
  if (!package) {
    return std::nullopt;
  }
  if (std::optional<std::string> range = engines_node(*package)) {
    return VersionAsk{*range, std::string(k_engines_source)};
  }
  return dependencies_ask(dir, *package);
}

// pyenv's `.python-version`: its first version; `3.12` is any 3.12.x. Names (system, pypy3.10,
// miniconda3-latest) ask nothing.
std::optional<VersionAsk> python_version_file_ask(const fs::path& file) {
  std::optional<VersionAsk> ask = version_file_ask(file);
  if (!ask || ask->range.empty() || !std::isdigit(static_cast<unsigned char>(ask->range[0])) ||
      ask->range.find_first_not_of("0123456789.") != std::string::npos) {
    return std::nullopt;
  }
  size_t dots = static_cast<size_t>(std::count(ask->range.begin(), ask->range.end(), '.'));
  ask->range = "==" + ask->range + (dots < 2 ? ".*" : "");
  ask->pep440 = true;
  return ask;
}

// pyproject.toml's `requires-python = "…"` in its [project] table (one line of TOML, which is
// how every build backend writes it).
std::optional<VersionAsk> requires_python_ask(const fs::path& file) {
  std::optional<std::string> text = read_project_file(file);
  if (!text) {
    return std::nullopt;
  }
  bool in_project = false;
  for (const std::string& raw : split_lines(*text)) {
    std::string line = trim(raw);
    if (line.starts_with('[')) {
      in_project = line == "[project]";
      continue;
    }
    if (!in_project || !line.starts_with("requires-python")) {
      continue;
    }
    std::string value = trim(std::string_view(line).substr(15));
    if (!value.starts_with('=')) {
      continue;
    }
    value = trim(std::string_view(value).substr(1));
    if (value.size() < 2 || (value[0] != '"' && value[0] != '\'') ||
        value.find(value[0], 1) == std::string::npos) {
      return std::nullopt;
    }
    return VersionAsk{value.substr(1, value.find(value[0], 1) - 1),
                      std::string(k_requires_python_source), true};
  }
  return std::nullopt;
}

std::optional<VersionAsk> python_ask_in(const fs::path& dir) {
  if (std::optional<VersionAsk> ask = python_version_file_ask(dir / ".python-version")) {
    return ask;
  }
  return requires_python_ask(dir / "pyproject.toml");
}

// The nearest directory from `cwd` up to `workspace` where `ask_in` finds an ask.
std::optional<VersionAsk> nearest_ask(const fs::path& cwd, const fs::path& workspace,
                                      std::optional<VersionAsk> (*ask_in)(const fs::path&)) {
  fs::path dir = cwd.lexically_normal();
  fs::path top = workspace.lexically_normal();
  for (int depth = 0; depth < 64; ++depth) {
    if (std::optional<VersionAsk> ask = ask_in(dir)) {
      return ask;
    }
    if (dir == top || dir == dir.parent_path() || !dir.string().starts_with(top.string())) {
      break;
    }
    dir = dir.parent_path();
  }
  return std::nullopt;
}

}  // namespace

std::optional<VersionAsk> node_version_ask(const fs::path& cwd, const fs::path& workspace) {
  return nearest_ask(cwd, workspace, node_ask_in);
}

std::optional<VersionAsk> python_version_ask(const fs::path& cwd, const fs::path& workspace) {
  return nearest_ask(cwd, workspace, python_ask_in);
}

std::string fitted_interpreter(std::string_view program) {
  std::string name = fs::path(program).filename().string();
  if (name == "node") {
    return name;
  }
  bool python =
      name == "python" || (name.starts_with("python3") &&
                           name.find_first_not_of("python3.0123456789") == std::string::npos);
  return python ? "python" : "";
}

std::optional<VersionAsk> project_version_ask(std::string_view program, const fs::path& cwd,
                                              const fs::path& workspace) {
  std::string interpreter = fitted_interpreter(program);
  if (interpreter.empty()) {
    return std::nullopt;
  }
  return interpreter == "node" ? node_version_ask(cwd, workspace)
                               : python_version_ask(cwd, workspace);
}

std::optional<VersionAsk> claimed_version_ask(std::string_view source, std::string_view range) {
  bool python = one_of(k_python_sources, source);
  if (!python && !one_of(k_node_sources, source) && !is_dependency_source(source)) {
    return std::nullopt;
  }
  return VersionAsk{std::string(range), std::string(source), python};
}

std::optional<bool> ask_satisfied(const std::string& version, const VersionAsk& ask) {
  return ask.pep440 ? pep440_satisfies(version, ask.range) : version_satisfies(version, ask.range);
}

std::optional<std::string> image_interpreter_version(std::string_view image,
                                                     std::string_view interpreter) {
  // Debian bookworm's nodejs (18.20.4+dfsg-1~deb12u2; the suite docker.host_mode fails when the
  // image says otherwise), as install/images.sh installs it.
  static constexpr std::array<std::string_view, 2> k_bookworm_node_images = {
      "sandshim/node:bookworm", "sandshim/wrap:bookworm"};
  if (interpreter == "node" && one_of(k_bookworm_node_images, image)) {
    return "18.20.4";
  }
  // Debian bookworm's python3 (3.11.2-1+b1), in the python and wrap images.
  static constexpr std::array<std::string_view, 2> k_bookworm_python_images = {
      "sandshim/python:bookworm", "sandshim/wrap:bookworm"};
  if (interpreter == "python" && one_of(k_bookworm_python_images, image)) {
    return "3.11.2";
  }
  return std::nullopt;
}

}  // namespace sandshim::shim
