#include "hooks/gdb_rules.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "common/strings.hpp"

namespace sandshim::hooks {

namespace {

using Argv = std::span<const Word>;

struct GdbOption {
  std::string_view name;  // without its leading dashes: gdb takes `-ex` and `--ex` alike
  bool takes_command;     // the value is a gdb command
};

// gdb's options that neither read a file of commands nor change what gdb loads; every other
// spelling (abbreviations included: gdb accepts `--comm` for --command) is refused.
constexpr std::array<GdbOption, 12> k_gdb_options = {{{"batch", false},
                                                      {"batch-silent", false},
                                                      {"q", false},
                                                      {"quiet", false},
                                                      {"silent", false},
                                                      {"n", false},
                                                      {"nx", false},
                                                      {"nh", false},
                                                      {"return-child-result", false},
                                                      {"ex", true},
                                                      {"eval-command", true},
                                                      {"args", false}}};

// Commands that run, stop, step and read the program; none reaches a shell, python or a file
// of commands. `run` takes no arguments here (gdb passes them to a shell).
constexpr std::array<std::string_view, 27> k_read_only_commands = {
    "run",   "r",    "bt", "backtrace", "where", "info",   "print", "p",    "frame",
    "f",     "list", "l",  "x",         "quit",  "q",      "c",     "b",    "continue",
    "break", "next", "n",  "step",      "s",     "finish", "up",    "down", "thread"};

// `set` only for how gdb prints.
constexpr std::array<std::string_view, 6> k_display_settings = {
    "pagination", "confirm", "width", "height", "print", "listsize"};

template <typename List>
bool listed(const List& list, std::string_view text) {
  return std::find(list.begin(), list.end(), text) != list.end();
}

bool is_read_only_command(const std::string& text);

// `thread apply all bt`, `frame apply 3 -q p x`: the command after the thread or frame list
// must itself be one of the set (`frame apply all shell …` is not).
bool is_read_only_apply(const std::vector<std::string>& words) {
  size_t i = 2;
  while (i < words.size() &&
         (words[i] == "all" || words[i] == "level" || words[i].starts_with('-') ||
          words[i].find_first_not_of("0123456789.-") == std::string::npos)) {
    ++i;
  }
  std::vector<std::string> rest(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  return !rest.empty() && is_read_only_command(join(rest, " "));
}

bool is_read_only_command(const std::string& text) {
  // Calls and assignments (`print system("…")`, `$_shell(…)`, `set var x = …`), strings, shell
  // escapes and pipes are what make an expression run something.
  if (text.find_first_of("()=\"'`!|{};\\\n") != std::string::npos) {
    return false;
  }
  std::vector<std::string> words = split_words(text);
  if (words.empty()) {
    return true;
  }
  std::string command = words[0].substr(0, words[0].find('/'));  // x/8x, p/x
  if (command == "run" || command == "r") {
    return words.size() == 1;
  }
  if (command == "set") {
    return words.size() >= 2 && listed(k_display_settings, words[1]);
  }
  if (words.size() >= 2 && words[1] == "apply") {
    return (command == "thread" || command == "frame" || command == "f") &&
           is_read_only_apply(words);
  }
  if (command == "thread") {
    return words.size() <= 2 && std::all_of(words.begin() + 1, words.end(), [](const auto& w) {
             return w.find_first_not_of("0123456789.") == std::string::npos;
           });
  }
  return listed(k_read_only_commands, command);
}

// One gdb option at argv[i] (advanced past its value): why it hides a command, or nullopt.
std::optional<std::string> check_option(Argv argv, size_t& i, bool& batch) {
  const std::string& word = argv[i].value;
  std::string_view spelled = std::string_view(word).substr(word.starts_with("--") ? 2 : 1);
  size_t equals = spelled.find('=');
  std::string_view name = spelled.substr(0, equals);
  auto option = std::find_if(k_gdb_options.begin(), k_gdb_options.end(),
                             [&](const GdbOption& o) { return o.name == name; });
  if (option == k_gdb_options.end() ||
      (equals != std::string_view::npos && !option->takes_command)) {
    return "gdb " + word.substr(0, std::min<size_t>(word.size(), 20));
  }
  batch = batch || name == "batch" || name == "batch-silent";
  if (!option->takes_command) {
    return std::nullopt;
  }
  if (equals == std::string_view::npos && i + 1 == argv.size()) {
    return "gdb " + word;
  }
  const Word& value = equals == std::string_view::npos ? argv[++i] : argv[i];
  std::string command =
      equals == std::string_view::npos ? value.value : std::string(spelled.substr(equals + 1));
  if (value.is_dynamic() || !is_read_only_command(trim(command))) {
    return "gdb -ex " + quoted(command.substr(0, std::min<size_t>(command.size(), 40)));
  }
  return std::nullopt;
}

bool is_args_option(const std::string& word) {
  return word == "--args" || word == "-args";
}

}  // namespace

std::optional<std::string> gdb_hidden_command(Argv argv) {
  bool batch = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const Word& word = argv[i];
    if (word.is_dynamic()) {
      return "gdb " + word.source;
    }
    if (is_args_option(word.value)) {
      break;
    }
    if (word.value.size() < 2 || word.value[0] != '-') {
      continue;  // the program, then a core file or pid
    }
    if (auto hidden = check_option(argv, i, batch)) {
      return hidden;
    }
  }
  if (!batch) {
    return std::string("gdb without -batch (it reads commands from its input)");
  }
  return std::nullopt;
}

std::optional<Argv> gdb_inferior(Argv argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i].value;
    if (is_args_option(word)) {
      return i + 1 < argv.size() ? std::optional<Argv>(argv.subspan(i + 1)) : std::nullopt;
    }
    if (word.size() < 2 || word[0] != '-') {
      return argv.subspan(i, 1);
    }
    bool separate_command =
        (word == "-ex" || word == "--ex" || word == "-eval-command" || word == "--eval-command");
    i += separate_command ? 1 : 0;
  }
  return std::nullopt;
}

}  // namespace sandshim::hooks
