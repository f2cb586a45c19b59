// The files a command writes (redirections, copies, `sed -i`, `curl -o`…) and whether one of
// them is a file the sandbox depends on.

#include "hooks/shell_analyser.hpp"

namespace sandshim::hooks::analysis {

namespace {

constexpr std::array<std::string_view, 14> k_writers = {
    "tee",   "ln",    "rm",    "unlink", "rmdir", "shred",   "truncate",
    "touch", "chmod", "chown", "chgrp",  "mkdir", "sqlite3", "sponge"};
constexpr std::array<std::string_view, 4> k_copiers = {"cp", "mv", "install", "rsync"};

// `curl -o FILE`, `wget --output-document=FILE`, `dd of=FILE`…: the file an output option at
// `i` names, `i` moved past a separate value; nullopt for any other word.
std::optional<std::pair<Word, std::string>> output_option_target(const std::string& name, Argv argv,
                                                                 size_t& i) {
  const Word& word = argv[i];
  const std::string& value = word.value;
  bool output_option = ((name == "curl" || name == "sort") && value == "-o") ||
                       (name == "wget" && value == "-O") || value == "--output" ||
                       value == "--output-document";
  size_t eq = value.find('=');
  bool output_assign =
      (name == "dd" && value.starts_with("of=")) ||
      ((name == "curl" || name == "wget" || name == "sort") &&
       (value.starts_with("--output=") || value.starts_with("--output-document=")));
  if (output_option && i + 1 < argv.size()) {
    return std::pair{argv[++i], name + " " + value};
  }
  if (output_assign) {
    Word target = word;
    target.value = value.substr(eq + 1);
    return std::pair{target, name == "dd" ? "dd of=" : name + " " + value.substr(0, eq)};
  }
  return std::nullopt;
}

// `cp SOURCE… DIR`, `-t DIR`, `--target-directory=DIR`: the directory copied into, and the
// sources in `operands`; options that take a value are skipped with it.
std::optional<Word> copy_destination(Argv argv, std::vector<Word>& operands) {
  std::optional<Word> directory;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& value = argv[i].value;
    if ((value == "-t" || value == "--target-directory") && i + 1 < argv.size()) {
      directory = argv[++i];
    } else if (value.starts_with("--target-directory=")) {
      directory = argv[i];
      directory->value = value.substr(value.find('=') + 1);
    } else if ((value == "-S" || value == "--suffix" || value == "-m" || value == "--mode" ||
                value == "-o" || value == "-g" || value == "--owner" || value == "--group") &&
               i + 1 < argv.size()) {
      ++i;
    } else if (!is_option(argv[i])) {
      operands.push_back(argv[i]);
    }
  }
  if (!directory && !operands.empty()) {
    directory = operands.back();
    operands.pop_back();
  }
  return directory;
}

// DIR/NAME for a `source` copied into `directory`: a word that expands as both may.
Word copied_into(const Word& directory, const Word& source) {
  Word inside = directory;
  std::string base = last_component(source.value);
  inside.value = directory.value + "/" + (base.empty() ? source.value : base);
  inside.parameters.insert(inside.parameters.end(), source.parameters.begin(),
                           source.parameters.end());
  inside.globs = inside.globs || source.globs;
  inside.substitutes_commands = inside.substitutes_commands || source.substitutes_commands;
  inside.arithmetic = inside.arithmetic || source.arithmetic;
  return inside;
}

// The directories a relative write may start from: the cwd, each literal `cd` target, and an
// unknown one after a `cd` only the running command knows.
std::vector<std::string> base_directories(const fs::path& cwd, bool relative, const Scope& scope) {
  std::vector<std::string> bases = {cwd.string()};
  for (const fs::path& dir : relative ? scope.cd_directories : std::vector<fs::path>{}) {
    bases.push_back(dir.string());
  }
  if (relative && !scope.cd_unknown.empty()) {
    bases.push_back(k_unknown_pattern);
  }
  return bases;
}

}  // namespace

void Analyser::collect_writes(const ShellParse& parse, const Scope& scope) {
  for (const SimpleCommand& command : parse.commands) {
    for (const Redirection& redirection : command.redirections) {
      if (writes_file(redirection)) {
        remember_written(redirection.target, scope);
      }
    }
    if (!command.words.empty()) {
      for (const Word& word : written_operands(command.words)) {
        remember_written(word, scope);
      }
    }
  }
}

std::vector<Word> Analyser::written_operands(const std::vector<Word>& words) {
  std::string name = last_component(words[0].value);
  bool in_place = name == "sed" && std::any_of(words.begin() + 1, words.end(), [](const Word& w) {
                    return w.value.starts_with("-i") || w.value.starts_with("--in-place");
                  });
  bool downloads = name == "curl" || name == "wget";
  std::vector<Word> written;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& value = words[i].value;
    if (copies_files(name) || in_place) {
      written.push_back(words[i]);
    } else if (downloads &&
               (value == "-o" || value == "-O" || value == "--output" ||
                value == "--output-document") &&
               i + 1 < words.size()) {
      written.push_back(words[i + 1]);
    } else if (size_t eq = value.find('=');
               (downloads &&
                (value.starts_with("--output=") || value.starts_with("--output-document="))) ||
               (name == "dd" && value.starts_with("of="))) {
      Word target = words[i];
      target.value = value.substr(eq + 1);
      written.push_back(target);
    }
  }
  return written;
}

void Analyser::remember_written(const Word& word, const Scope& scope) {
  for (const fs::path& path : candidate_paths(word, scope)) {
    m_written.push_back(path);
  }
}

bool Analyser::writes_file(const Redirection& redirection) {
  static constexpr std::array<std::string_view, 6> k_writing = {">", ">>", ">|", "<>", "&>", "&>>"};
  if (one_of(k_writing, redirection.op)) {
    return true;
  }
  return redirection.op == ">&" && !redirection.target.value.empty() &&
         redirection.target.value != "-" &&
         std::isdigit(static_cast<unsigned char>(redirection.target.value[0])) == 0;
}

std::vector<fs::path> Analyser::candidate_paths(const Word& word, const Scope& scope) const {
  std::vector<fs::path> paths;
  if (auto path = literal_path(word, m_options.cwd)) {
    paths.push_back(*path);
    if (!fs::path(word.value).is_absolute()) {
      for (const fs::path& dir : scope.cd_directories) {
        paths.push_back(*literal_path(word, dir));
      }
    }
  }
  return paths;
}

bool Analyser::runs_written_file(const Invocation& invocation, const Scope& scope) const {
  if (m_written.empty() || invocation.lookup == Lookup::shim || is_shell_builtin(invocation.name)) {
    return false;
  }
  std::vector<fs::path> candidates;
  if (invocation.lookup == Lookup::by_path) {
    Word word;
    word.value = invocation.command;
    candidates = candidate_paths(word, scope);
  } else {
    for (const fs::path& directory : scope.appended_path) {
      candidates.push_back((directory / invocation.name).lexically_normal());
    }
  }
  return std::any_of(candidates.begin(), candidates.end(), [&](const fs::path& path) {
    return std::find(m_written.begin(), m_written.end(), path) != m_written.end();
  });
}

void Analyser::check_copies(const std::string& name, Argv argv, const Scope& scope) {
  if (!m_options.locate || !m_options.known_program_of) {
    return;
  }
  for (const Word& word : argv.subspan(1)) {
    std::string operand = word.value.starts_with("if=") ? word.value.substr(3) : word.value;
    if (word.is_dynamic() || operand.find('/') == std::string::npos) {
      continue;
    }
    std::optional<fs::path> file = m_options.locate(operand);
    std::optional<std::string> known = file ? m_options.known_program_of(*file) : std::nullopt;
    if (known && (classify_name(*known, m_options.shimmed) != CommandClass::other ||
                  is_engine_client(*known) || is_loader(*known))) {
      add_finding(FindingKind::interpreter_copy, name + " " + operand, *known,
                  scope.enclosing_shell);
    }
  }
}

void Analyser::check_program_writes(const std::string& name, Argv argv, const Scope& scope) {
  for (const auto& [target, how] : written_targets(name, argv)) {
    if (check_protected_write(target, how, scope)) {
      return;  // one refusal a command is enough to fix it
    }
  }
}

std::vector<std::pair<Word, std::string>> Analyser::written_targets(const std::string& name,
                                                                    Argv argv) {
  auto has_option = [&](std::string_view prefix) {
    return std::any_of(argv.begin() + 1, argv.end(),
                       [&](const Word& w) { return w.value.starts_with(prefix); });
  };
  bool in_place = (name == "sed" && (has_option("-i") || has_option("--in-place"))) ||
                  (name == "perl" && (has_option("-i") || has_option("-pi") || has_option("-ni")));
  std::vector<std::pair<Word, std::string>> targets;
  if (one_of(k_copiers, name) &&
      !(name == "cp" && (has_option("-l") || has_option("-s") || has_option("--link") ||
                         has_option("--symbolic-link")))) {
    return copy_targets(name, argv);
  }
  bool writer = one_of(k_writers, name) || in_place || one_of(k_copiers, name);
  for (size_t i = 1; i < argv.size(); ++i) {
    if (std::optional<std::pair<Word, std::string>> target = output_option_target(name, argv, i)) {
      targets.push_back(*target);
    } else if (writer && !is_option(argv[i])) {
      targets.emplace_back(argv[i], name);
    }
  }
  return targets;
}

std::vector<std::pair<Word, std::string>> Analyser::copy_targets(const std::string& name,
                                                                 Argv argv) {
  std::vector<Word> operands;
  std::optional<Word> directory = copy_destination(argv, operands);
  std::vector<std::pair<Word, std::string>> targets;
  if (!directory) {
    return targets;
  }
  targets.emplace_back(*directory, name);
  for (const Word& source : operands) {
    if (name == "mv") {
      targets.emplace_back(source, name);  // the source goes away
    }
    targets.emplace_back(copied_into(*directory, source), name);
  }
  return targets;
}

bool Analyser::check_protected_write(const Word& target, const std::string& how,
                                     const Scope& scope) {
  bool removes = how == "rm" || how == "mv" || how == "rmdir" || how == "shred";
  Expansion expansion = m_values.expand(target);
  for (const std::string& pattern : expansion.patterns) {
    bool relative = !pattern.starts_with('/') && !pattern.starts_with(k_any_text);
    for (const std::string& base : base_directories(m_options.cwd, relative, scope)) {
      std::string absolute = absolute_pattern(pattern, base);
      std::optional<std::string> what =
          protected_pattern_reason(absolute, m_options.protected_paths);
      if (!what && removes && !has_wildcard(absolute)) {
        what = protected_place_below(absolute);
      }
      if (!what) {
        continue;
      }
      std::string unknown = base == k_unknown_pattern ? scope.cd_unknown : expansion.unknown;
      if (has_wildcard(absolute) && !unknown.empty()) {
        add_finding(FindingKind::unresolved_write, how + " " + target.value, unknown,
                    scope.enclosing_shell);
      } else {
        add_finding(FindingKind::protected_write, target.value, *what, scope.enclosing_shell);
      }
      return true;
    }
  }
  return false;
}

std::optional<std::string> Analyser::protected_place_below(const fs::path& directory) const {
  for (const ProtectedPlace& place : m_options.protected_paths.places()) {
    auto mismatch =
        std::mismatch(directory.begin(), directory.end(), place.path.begin(), place.path.end());
    if (mismatch.first == directory.end() && directory != place.path) {
      return place.what + " (" + place.path.string() + ")";
    }
  }
  return std::nullopt;
}

}  // namespace sandshim::hooks::analysis
