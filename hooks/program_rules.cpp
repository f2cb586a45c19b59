#include "hooks/program_rules.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include "common/strings.hpp"
#include "hooks/gdb_rules.hpp"

namespace sandshim::hooks {

namespace {

using Argv = std::span<const Word>;

constexpr std::array<std::string_view, 17> k_engine_clients = {
    "docker",  "dockerd", "docker-compose", "podman", "podman-remote", "podman-compose",
    "nerdctl", "buildah", "buildctl",       "ctr",    "crictl",        "runc",
    "crun",    "lima",    "limactl",        "colima", "finch"};

constexpr std::array<std::string_view, 4> k_socket_names = {"docker.sock", "podman.sock",
                                                            "containerd.sock", "buildkitd.sock"};

// Variables a program runs as a command, or bash expands as code, after this command was checked.
constexpr std::array<std::string_view, 46> k_command_variables = {"GIT_EDITOR",
                                                                  "GIT_SEQUENCE_EDITOR",
                                                                  "GIT_SSH",
                                                                  "GIT_SSH_COMMAND",
                                                                  "GIT_PAGER",
                                                                  "GIT_EXTERNAL_DIFF",
                                                                  "GIT_ASKPASS",
                                                                  "SSH_ASKPASS",
                                                                  "GIT_PROXY_COMMAND",
                                                                  "GIT_CONFIG",
                                                                  "GIT_CONFIG_PARAMETERS",
                                                                  "GIT_CONFIG_COUNT",
                                                                  "GIT_CONFIG_GLOBAL",
                                                                  "GIT_CONFIG_SYSTEM",
                                                                  "GIT_EXEC_PATH",
                                                                  "GIT_TEMPLATE_DIR",
                                                                  "GIT_DIR",
                                                                  "GIT_COMMON_DIR",
                                                                  "EDITOR",
                                                                  "VISUAL",
                                                                  "PAGER",
                                                                  "MANPAGER",
                                                                  "LESSOPEN",
                                                                  "LESSCLOSE",
                                                                  "BROWSER",
                                                                  "SHELL",
                                                                  "PROMPT_COMMAND",
                                                                  "PS0",
                                                                  "PS1",
                                                                  "PS2",
                                                                  "PS3",
                                                                  "PS4",
                                                                  "BASH_ENV",
                                                                  "ENV",
                                                                  "SHELLOPTS",
                                                                  "BASHOPTS",
                                                                  "EXECIGNORE",
                                                                  "BASH_CMDS",
                                                                  "BASH_ALIASES",
                                                                  "BASH_LOADABLES_PATH",
                                                                  "BASH_FUNC_",
                                                                  "MAKEFLAGS",
                                                                  "MFLAGS",
                                                                  "CURL_HOME",
                                                                  "SSH_AUTH_SOCK",
                                                                  "TAR_OPTIONS"};

// git configuration keys whose value git runs as a command (`*` is any middle section).
constexpr std::array<std::string_view, 38> k_git_command_keys = {"core.fsmonitor",
                                                                 "core.sshcommand",
                                                                 "core.hookspath",
                                                                 "core.pager",
                                                                 "core.editor",
                                                                 "core.askpass",
                                                                 "core.gitproxy",
                                                                 "core.alternaterefscommand",
                                                                 "sequence.editor",
                                                                 "diff.external",
                                                                 "diff.*.textconv",
                                                                 "diff.*.command",
                                                                 "difftool.*.cmd",
                                                                 "mergetool.*.cmd",
                                                                 "merge.*.driver",
                                                                 "filter.*.clean",
                                                                 "filter.*.smudge",
                                                                 "filter.*.process",
                                                                 "credential.helper",
                                                                 "credential.*.helper",
                                                                 "gpg.program",
                                                                 "gpg.*.program",
                                                                 "pager.*",
                                                                 "interactive.difffilter",
                                                                 "sendemail.tocmd",
                                                                 "sendemail.cccmd",
                                                                 "sendemail.sendmailcmd",
                                                                 "uploadpack.packobjectshook",
                                                                 "remote.*.uploadpack",
                                                                 "remote.*.receivepack",
                                                                 "include.path",
                                                                 "includeif.*.path",
                                                                 "init.templatedir",
                                                                 "web.browser",
                                                                 "browser.*.cmd",
                                                                 "man.*.cmd",
                                                                 "submodule.*.update",
                                                                 "url.*.insteadof"};

// Settings whose value is one program that git (or `man`, `less`) starts for a message or a page,
// and the programs among those values that run nothing else: `GIT_EDITOR=true git rebase
// --continue` keeps the message as is, `GIT_PAGER=cat` prints the page. A value naming any other
// program, or with anything more than that name, is still a command sandshim cannot follow.
constexpr std::array<std::string_view, 10> k_program_settings = {
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER",   "EDITOR",         "VISUAL", "PAGER",
    "MANPAGER",   "core.pager",          "core.editor", "sequence.editor"};
constexpr std::array<std::string_view, 4> k_inert_programs = {"true", "false", ":", "cat"};

// ssh options (-o NAME=…) that run a local command.
constexpr std::array<std::string_view, 5> k_ssh_command_options = {
    "proxycommand", "localcommand", "knownhostscommand", "permitlocalcommand", "match"};

constexpr std::array<std::string_view, 14> k_copiers = {
    "cp",  "ln",  "link", "install", "mv",   "rsync",  "dd",
    "cat", "tar", "cpio", "tee",     "gzip", "base64", "objcopy"};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains_ci(std::string_view text, std::string_view needle) {
  return lower(text).find(needle) != std::string::npos;
}

std::vector<std::string_view> split_dots(std::string_view key) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.', start)) {
    parts.push_back(key.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(key.substr(start));
  return parts;
}

// `diff.*.textconv` matches diff.NAME.textconv whatever NAME holds (it may contain dots).
bool git_key_matches(std::string_view pattern, std::string_view key) {
  std::vector<std::string_view> want = split_dots(pattern);
  std::vector<std::string_view> have = split_dots(key);
  if (want.size() == 2 && want[1] == "*") {
    return have.size() >= 2 && have.front() == want.front();
  }
  if (want.size() == 3) {
    return have.size() >= 3 && have.front() == want[0] && have.back() == want[2];
  }
  return have.size() == want.size() && have == want;
}

bool git_key_runs_command(const std::string& key, std::string_view value) {
  std::string name = lower(key);
  if (name.starts_with("alias.")) {
    return value.starts_with('!');
  }
  if (runs_only_inert_program(name, value)) {
    return false;
  }
  return std::any_of(k_git_command_keys.begin(), k_git_command_keys.end(),
                     [&](std::string_view pattern) { return git_key_matches(pattern, name); });
}

// `git config [--global…] KEY VALUE`, the operands from `first` on.
std::optional<std::string> git_config_hidden_command(Argv argv, size_t first) {
  std::vector<std::string> operands;
  for (size_t j = first; j < argv.size(); ++j) {
    if (!argv[j].value.starts_with('-')) {
      operands.push_back(argv[j].value);
    }
  }
  if (operands.size() >= 2 && git_key_runs_command(operands[0], operands[1])) {
    return "git config " + operands[0];
  }
  return std::nullopt;
}

// `git -c KEY=VALUE`, `--config-env=KEY=VAR`, `git config [--global…] KEY VALUE`, `ext::` URLs.
std::optional<std::string> git_hidden_command(Argv argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i].value;
    std::string setting;
    if ((arg == "-c" || arg == "--config-env") && i + 1 < argv.size()) {
      setting = argv[++i].value;
    } else if (arg.starts_with("-c") && arg.size() > 2) {
      setting = arg.substr(2);
    } else if (arg.starts_with("--config-env=")) {
      setting = arg.substr(13);
    } else if (arg.starts_with("ext::") || arg.find("::ext::") != std::string::npos) {
      return "git ext:: transport";
    } else if (arg == "config") {
      return git_config_hidden_command(argv, i + 1);
    }
    size_t equals = setting.find('=');
    if (!setting.empty() &&
        git_key_runs_command(setting.substr(0, equals),
                             equals == std::string::npos ? "" : setting.substr(equals + 1))) {
      return "git -c " + setting.substr(0, equals);
    }
  }
  return std::nullopt;
}

std::optional<std::string> tar_hidden_command(Argv argv) {
  for (const Word& word : argv.subspan(1)) {
    const std::string& arg = word.value;
    for (std::string_view option :
         {"--checkpoint-action", "--to-command", "--use-compress-program", "--info-script",
          "--new-volume-script", "--rsh-command", "--rmt-command"}) {
      if (arg.starts_with(option)) {
        return "tar " + std::string(option);
      }
    }
    if (arg.starts_with("-I") || arg.starts_with("-F") ||
        (arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
         arg.find_first_of("IF") != std::string::npos)) {
      return "tar -I/-F";
    }
  }
  return std::nullopt;
}

std::optional<std::string> ssh_hidden_command(std::string_view name, Argv argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i].value;
    std::string option;
    if (arg == "-o" && i + 1 < argv.size()) {
      option = argv[++i].value;
    } else if (arg.starts_with("-o")) {
      option = arg.substr(2);
    } else if (arg == "-F" || arg.starts_with("-F") || (name != "ssh" && arg == "-S")) {
      return std::string(name) + " " + arg.substr(0, 2);
    }
    std::string key = lower(option.substr(0, option.find_first_of("= \t")));
    if (one_of(k_ssh_command_options, key)) {
      return std::string(name) + " -o " + key;
    }
  }
  return std::nullopt;
}

std::optional<std::string> option_prefixed(std::string_view name, Argv argv,
                                           std::initializer_list<std::string_view> options) {
  for (const Word& word : argv.subspan(1)) {
    for (std::string_view option : options) {
      if (word.value == option || (option.size() > 2 && word.value.starts_with(option))) {
        return std::string(name) + " " + std::string(option);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> vim_hidden_command(std::string_view name, Argv argv) {
  for (const Word& word : argv.subspan(1)) {
    const std::string& arg = word.value;
    if (arg == "-c" || arg == "--cmd" || arg == "-S" || arg == "-s" || arg == "-u" ||
        arg.starts_with('+') || arg.starts_with("-c") || arg.starts_with("--cmd")) {
      return std::string(name) + " " + arg.substr(0, std::min<size_t>(arg.size(), 5));
    }
  }
  return std::nullopt;
}

bool runs_from_awk(std::string_view program) {
  if (program.find("system") != std::string_view::npos) {
    return true;
  }
  for (size_t bar = program.find('|'); bar != std::string_view::npos;
       bar = program.find('|', bar + 2)) {
    if (bar + 1 >= program.size() || program[bar + 1] != '|') {
      return true;
    }
  }
  return false;
}

// awk's program (the first operand unless -f/-e): system(), pipes to or from commands.
std::optional<std::string> awk_hidden_command(std::string_view name, Argv argv) {
  bool program_given = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i].value;
    if (arg == "-f" || arg.starts_with("--file") || arg.starts_with("-f")) {
      return std::string(name) + " -f";
    }
    bool inline_program = arg == "-e" || arg == "--source";
    if (inline_program || arg == "-v" || arg == "-F") {
      if (inline_program && i + 1 < argv.size() && runs_from_awk(argv[i + 1].value)) {
        return std::string(name) + " system()";
      }
      program_given = program_given || inline_program;
      ++i;
      continue;
    }
    if (arg.starts_with('-') && arg != "-" && arg != "--") {
      continue;
    }
    if (!program_given && runs_from_awk(arg)) {
      return std::string(name) + " system()";
    }
    program_given = true;
  }
  return std::nullopt;
}

std::string_view skip_sed_address(std::string_view segment) {
  size_t i = 0;
  while (i < segment.size()) {
    char c = segment[i];
    if (c == '/' || c == '\\') {
      char delimiter = c == '\\' && i + 1 < segment.size() ? segment[++i] : '/';
      size_t close = segment.find(delimiter, i + 1);
      i = close == std::string_view::npos ? segment.size() : close + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
               std::string_view("$,!~ \t+").find(c) != std::string_view::npos) {
      ++i;
    } else {
      break;
    }
  }
  return segment.substr(i);
}

// The `e` command, or the `e` flag of `s///e`.
bool sed_segment_executes(std::string_view segment) {
  std::string_view command = skip_sed_address(segment);
  if (command.empty()) {
    return false;
  }
  if (command[0] == 'e') {
    return command.size() == 1 || std::isspace(static_cast<unsigned char>(command[1])) != 0;
  }
  if (command[0] != 's' || command.size() < 2) {
    return false;
  }
  char delimiter = command[1];
  size_t second = command.find(delimiter, 2);
  size_t third = second == std::string_view::npos ? second : command.find(delimiter, second + 1);
  if (third == std::string_view::npos) {
    return false;
  }
  std::string_view flags = command.substr(third + 1);
  flags = flags.substr(0, flags.find_first_of(" \t;}"));
  return flags.find('e') != std::string_view::npos;
}

bool sed_script_executes(std::string_view script) {
  size_t start = 0;
  while (start <= script.size()) {
    size_t end = script.find_first_of(";\n{}", start);
    std::string_view segment =
        script.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t first = segment.find_first_not_of(" \t");
    if (first != std::string_view::npos && sed_segment_executes(segment.substr(first))) {
      return true;
    }
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return false;
}

std::optional<std::string> sed_hidden_command(Argv argv) {
  bool script_given = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i].value;
    if (arg == "-f" || arg.starts_with("--file")) {
      return "sed -f";
    }
    std::string script;
    if ((arg == "-e" || arg == "--expression") && i + 1 < argv.size()) {
      script = argv[++i].value;
      script_given = true;
    } else if (arg.starts_with("--expression=")) {
      script = arg.substr(13);
      script_given = true;
    } else if (arg.starts_with('-')) {
      continue;
    } else if (!script_given) {
      script = arg;
      script_given = true;
    }
    if (!script.empty() && sed_script_executes(script)) {
      return "sed e";
    }
  }
  return std::nullopt;
}

// `socat … EXEC:…` or `SYSTEM:…` runs a command of its own.
std::optional<std::string> socat_hidden_command(Argv argv) {
  bool runs = std::any_of(argv.begin() + 1, argv.end(), [](const Word& word) {
    return contains_ci(word.value, "exec") || contains_ci(word.value, "system");
  });
  return runs ? std::optional<std::string>("socat EXEC/SYSTEM") : std::nullopt;
}

// Programs an option makes run a command (`rsync -e`, `nc -e`, `make SHELL=`), and debuggers and
// editors that run commands of their own whatever their arguments.
std::optional<std::string> option_hidden_command(std::string_view name, Argv argv) {
  if (name == "rsync") {
    return option_prefixed(name, argv, {"-e", "--rsh", "--rsync-path"});
  }
  if (name == "sort") {
    return option_prefixed(name, argv, {"--compress-program"});
  }
  if (name == "nc" || name == "ncat" || name == "netcat") {
    return option_prefixed(name, argv, {"-e", "-c", "--exec", "--sh-exec", "--lua-exec"});
  }
  if (name == "gdb" || name == "gdbtui" || name == "gdb-multiarch") {
    return gdb_hidden_command(argv);
  }
  if (name == "lldb" || name == "emacs" || name == "ed" || name == "expect") {
    return std::string(name) + " runs commands of its own";
  }
  if (name == "make" || name == "gmake") {
    return option_prefixed(name, argv, {"SHELL=", "--eval", "-E", "MAKESHELL="});
  }
  return std::nullopt;
}

}  // namespace

bool is_engine_client(std::string_view name) {
  return one_of(k_engine_clients, name);
}

bool is_loader(std::string_view name) {
  return name == "ld.so" || name.starts_with("ld-linux") || name.starts_with("ld-musl") ||
         name.starts_with("ld64.so");
}

bool names_engine_socket(std::string_view text) {
  return std::any_of(k_socket_names.begin(), k_socket_names.end(),
                     [&](std::string_view socket) { return text.find(socket) != text.npos; });
}

std::optional<std::string> engine_access_of(std::string_view name, Argv argv) {
  for (const Word& word : argv.subspan(std::min<size_t>(1, argv.size()))) {
    if (names_engine_socket(word.value)) {
      return std::string(name) + " " + word.value;
    }
  }
  if (name == "curl") {
    return option_prefixed(name, argv,
                           {"--unix-socket", "--abstract-unix-socket", "-K", "--config"});
  }
  if (name == "socat") {
    bool unix_address = std::any_of(argv.begin() + 1, argv.end(), [](const Word& word) {
      return contains_ci(word.value, "unix") || contains_ci(word.value, "abstract");
    });
    return unix_address ? std::optional<std::string>("socat UNIX-CONNECT") : std::nullopt;
  }
  if (name == "nc" || name == "ncat" || name == "netcat" || name == "nc.openbsd" ||
      name == "nc.traditional") {
    return option_prefixed(name, argv, {"-U", "--unixsock"});
  }
  return std::nullopt;
}

std::optional<std::string> hidden_command_of(std::string_view name, Argv argv) {
  if (name == "git") {
    return git_hidden_command(argv);
  }
  if (name == "tar") {
    return tar_hidden_command(argv);
  }
  if (name == "ssh" || name == "scp" || name == "sftp" || name == "slogin" || name == "ssh-argv0") {
    return ssh_hidden_command(name, argv);
  }
  if (name == "socat") {
    return socat_hidden_command(argv);
  }
  if (name == "vim" || name == "vi" || name == "nvim" || name == "ex" || name == "view" ||
      name == "vimdiff" || name == "rvim" || name == "gvim") {
    return vim_hidden_command(name, argv);
  }
  if (name == "awk" || name == "gawk" || name == "mawk" || name == "nawk") {
    return awk_hidden_command(name, argv);
  }
  if (name == "sed" || name == "gsed") {
    return sed_hidden_command(argv);
  }
  return option_hidden_command(name, argv);
}

bool runs_only_inert_program(std::string_view setting, std::string_view value) {
  bool names_a_program = one_of(k_program_settings, setting) || setting.starts_with("pager.");
  return names_a_program && one_of(k_inert_programs, value);
}

bool is_inert_prompt(std::string_view name, std::string_view value) {
  constexpr std::array<std::string_view, 5> k_prompts = {"PS0", "PS1", "PS2", "PS3", "PS4"};
  constexpr std::array<std::string_view, 5> k_expanding = {"$(", "${", "$[", "`", "\\"};
  return one_of(k_prompts, name) &&
         std::none_of(k_expanding.begin(), k_expanding.end(), [&](std::string_view text) {
           return value.find(text) != std::string_view::npos;
         });
}

bool is_command_variable(std::string_view name) {
  if (name.starts_with("GIT_CONFIG_KEY_") || name.starts_with("GIT_CONFIG_VALUE_") ||
      name.starts_with("BASH_FUNC_")) {
    return true;
  }
  return one_of(k_command_variables, name);
}

bool copies_files(std::string_view name) {
  return one_of(k_copiers, name);
}

}  // namespace sandshim::hooks
