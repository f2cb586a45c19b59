// The everyday corpus (tests/data/hooks/everyday_corpus.txt): ordinary commands agents run on
// Python, Node, C/C++, Java, Rust, Go and shell projects, each answered by `run_hook` in-process
// exactly as `sandshim hook --agent AGENT` answers it (the agent's captured payload, its adapter,
// the host view of a fixture workspace), per hook.mode and agent. Prints what each mode
// refuses and how much of it is harmless (the false-refusal rate), and checks that every refusal
// of an interpreter route names a command to run instead.

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "broker/unix_socket.hpp"
#include "common/paths.hpp"
#include "hooks/hook_run.hpp"
#include "hooks/program_files.hpp"
#include "hooks/sandbox_shell.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;
using sandshim::testing::data_dir;
using sandshim::testing::read_text;
using sandshim::testing::write_text;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char* const k_modes[] = {"path", "deny", "wrap"};
const char* const k_agents[] = {"claude", "codex", "gemini"};

// One `=== ID -- SOURCE` entry; `expect` maps "MODE" or "MODE/AGENT" to an answer.
struct Entry {
  std::string id;
  std::string source;
  std::string command;
  std::map<std::string, std::string> expect;
};

void finish(Entry& entry) {
  while (entry.command.ends_with('\n')) {
    entry.command.pop_back();
  }
}

std::vector<Entry> read_corpus() {
  std::ifstream in(data_dir() / "hooks" / "everyday_corpus.txt");
  REQUIRE(in);
  std::vector<Entry> entries;
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("=== ")) {
      if (!entries.empty()) {
        finish(entries.back());
      }
      size_t dash = line.find(" -- ");
      REQUIRE(dash != std::string::npos);
      entries.push_back({line.substr(4, dash - 4), line.substr(dash + 4), "", {}});
    } else if (entries.empty() || line.starts_with("###")) {
      continue;  // the header, and section titles
    } else if (line.starts_with(">>> ")) {
      size_t colon = line.find(": ");
      REQUIRE(colon != std::string::npos);
      entries.back().expect[line.substr(4, colon - 4)] = line.substr(colon + 2);
    } else if (!entries.back().expect.empty()) {
      INFO(entries.back().id);
      REQUIRE(line.empty());  // nothing but blank lines after the expectations
    } else {
      entries.back().command += line + "\n";
    }
  }
  if (!entries.empty()) {
    finish(entries.back());
  }
  return entries;
}

void write_executable(const fs::path& file, const std::string& text) {
  write_text(file, text);
  fs::permissions(file, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
}

void link(const fs::path& target, const fs::path& name) {
  fs::create_directories(name.parent_path());
  fs::create_symlink(target, name);
}

// Directories from `top` down to `dir` made 0755: no one but their owner can add a file.
void make_owner_only_directories(const fs::path& top, const fs::path& dir) {
  fs::create_directories(dir);
  for (fs::path place = dir; place != top.parent_path(); place = place.parent_path()) {
    fs::permissions(place, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  }
}

// A native program: what read_script_file tells from a script (an ELF header and a NUL).
const std::string k_elf(
    "\x7f"
    "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
    16);

// The workspace every entry runs in: a Python project with its venvs, a Node project's
// node_modules, Gradle and Maven wrappers, an autoconf configure, CMake and Make files, Cargo and
// Go modules, a bats suite; and the tools a developer's PATH has, as their installers put them:
// Debian's script programs (mvn, bats, ldd) in system/, which stands for / (0755 all the way
// down, so only its owner can have written them), the rest in tools/bin. The long scripts
// (gradlew, mvnw, configure, activate, and Debian's) are in tests/data/hooks/everyday/.
class Workspace {
 public:
  explicit Workspace(fs::path root) : m_root(std::move(root)) {
    fs::path from = data_dir() / "hooks" / "everyday";
    fs::create_directories(project() / ".git");
    write_text(project() / ".git" / "HEAD", "ref: refs/heads/main\n");
    for (const char* script :
         {"gradlew", "mvnw", "configure", "scripts/check.sh", "tests/run.bats"}) {
      write_executable(project() / script, read_text(from / script));
    }
    add_python();
    add_node();
    add_tools();
    add_system_scripts();
    write_text(home() / ".cargo" / "env", read_text(from / "cargo_env"));
    for (const char* file :
         {"Makefile", "CMakeLists.txt", "Cargo.toml", "go.mod", "package.json", "pyproject.toml",
          "README.md", "src/main.c", "src/app.py", "tests/test_app.py", "index.js"}) {
      write_text(project() / file, "\n");
    }
  }

  fs::path project() const { return m_root / "project"; }
  fs::path home() const { return m_root / "home"; }
  fs::path tools() const { return m_root / "tools" / "bin"; }
  fs::path shim_dir() const { return home() / ".local" / "share" / "sandshim" / "bin"; }
  fs::path sandshim() const { return m_root / "tools" / "sandshim"; }
  fs::path system_root() const { return m_root / "system"; }
  // The tools that differ from host to host are in tools/bin, first, and system/usr/bin; the
  // host's /usr/bin gives the base system (coreutils, git, bash, python3) that every Debian-like
  // host has.
  std::string agent_path() const {
    return tools().string() + ":" + (system_root() / "usr" / "bin").string() + ":/usr/bin:/bin";
  }

 private:
  // `.venv` made by the python sandshim's image has (Debian bookworm's 3.11 at /usr/bin), and
  // `.venv312` made by pyenv's 3.12, which the image cannot run.
  void add_python() {
    fs::path from = data_dir() / "hooks" / "everyday";
    struct Made {
      const char* dir;
      const char* home;
      const char* version;
    };
    for (Made venv : {Made{".venv", "/usr/bin", "3.11.2"},
                      Made{".venv312", "/home/u/.pyenv/versions/3.12.7/bin", "3.12.7"}}) {
      fs::path bin = project() / venv.dir / "bin";
      write_text(project() / venv.dir / "pyvenv.cfg",
                 std::string("home = ") + venv.home + "\ninclude-system-site-packages = false\n" +
                     "version = " + venv.version + "\n");
      link(std::string(venv.home) + "/python3", bin / "python");
      link("python", bin / "python3");
      write_text(bin / "activate", read_text(from / "activate"));
      std::string shebang = "#!" + (bin / "python").string() + "\n";
      for (const char* tool : {"pytest", "pip", "pip3", "mypy", "black", "flake8", "coverage",
                               "tox", "pre-commit", "isort", "pylint", "ipython"}) {
        write_executable(bin / tool,
                         shebang + "import re, sys\nfrom x import main\nsys.exit(main())\n");
      }
      write_executable(bin / "ruff", k_elf);
      std::string minor = std::string(venv.version).substr(0, 4);  // "3.11"
      write_text(project() / venv.dir / "lib" / ("python" + minor) / "site-packages" / "ruff" /
                     "__main__.py",
                 "from ruff.__main__ import find_ruff_bin\n");
    }
  }

  void add_node() {
    fs::path modules = project() / "node_modules";
    for (const char* tool : {"jest", "eslint", "tsc", "prettier", "vitest", "mocha", "ts-node"}) {
      write_executable(modules / tool / "bin" / (std::string(tool) + ".js"),
                       "#!/usr/bin/env node\nrequire('../lib/cli').run();\n");
      link(fs::path("..") / tool / "bin" / (std::string(tool) + ".js"), modules / ".bin" / tool);
    }
  }

  // npm, npx, yarn, pnpm as Node installs them (scripts run by `env node`), the Rust, Go and C
  // toolchains and uv as binaries, Debian's mvn and bats as shell scripts, pipx's tools.
  void add_tools() {
    fs::path from = data_dir() / "hooks" / "everyday";
    for (const char* tool : {"npm", "npx", "yarn", "pnpm", "corepack"}) {
      write_executable(tools() / tool, "#!/usr/bin/env node\nrequire('../lib/cli.js')(process)\n");
    }
    for (const char* tool :
         {"cargo",         "rustc", "rustup",       "go", "gofmt",      "cmake", "ctest", "make",
          "gcc",           "cc",    "clang-format", "uv", "shellcheck", "java",  "javac", "gradle",
          "golangci-lint", "meson", "ninja",        "jq"}) {
      write_executable(tools() / tool, k_elf);
    }
    for (const char* tool : {"pytest", "pip", "pip3", "mypy", "black", "flake8", "isort", "pylint",
                             "coverage", "ipython", "virtualenv", "meson"}) {
      write_executable(tools() / tool,
                       "#!/usr/bin/python3\nimport sys\nfrom x import main\n"
                       "sys.exit(main())\n");
    }
    for (const char* tool :
         {"valgrind",   "gdb",   "objdump", "nm",   "strace", "ccache",
          "pkg-config", "rg",    "fd",      "tree", "shfmt",  "editorconfig-checker",
          "docker",     "sudo",  "curl",    "wget", "lsof",   "watch",
          "unzip",      "clang", "g++"}) {
      write_executable(tools() / tool, k_elf);
    }
    write_executable(tools() / "autoreconf", "#!/usr/bin/perl\nuse strict;\n");
    // pipx's: a venv of the host's python each, under ~/.local/pipx, the tool linked from its bin.
    for (const char* tool : {"poetry", "tox", "pre-commit"}) {
      fs::path venv = home() / ".local" / "pipx" / "venvs" / tool;
      write_text(venv / "pyvenv.cfg",
                 "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n");
      link("/usr/bin/python3", venv / "bin" / "python");
      write_executable(venv / "bin" / tool,
                       "#!" + (venv / "bin" / "python").string() + "\nimport sys\nsys.exit(0)\n");
      link(venv / "bin" / tool, tools() / tool);
    }
    write_executable(sandshim(), k_elf);
  }

  // As Debian installs them: /usr/bin/ldd and /usr/bin/bats, /usr/bin/mvn a link to
  // /usr/share/maven/bin/mvn; files 0755 in 0755 directories.
  void add_system_scripts() {
    fs::path from = data_dir() / "hooks" / "everyday";
    fs::path bin = system_root() / "usr" / "bin";
    fs::path maven = system_root() / "usr" / "share" / "maven" / "bin";
    make_owner_only_directories(system_root(), bin);
    make_owner_only_directories(system_root(), maven);
    write_executable(bin / "ldd", read_text(from / "ldd"));
    write_executable(bin / "bats", read_text(from / "bats"));
    write_executable(maven / "mvn", read_text(from / "mvn"));
    link("../share/maven/bin/mvn", bin / "mvn");
  }

  fs::path m_root;
};

// What one agent was told, as its adapter said it: allow (nothing to change), rewrite, deny.
struct Answer {
  std::string verdict;
  std::string rule;
  std::string reason;
};

std::string answer_of(const std::string& sent) {
  if (sent.find("updatedInput") != std::string::npos ||
      sent.find("tool_input") != std::string::npos) {
    return "rewrite";
  }
  return sent == "deny" || sent == "exit 2" ? "deny" : "allow";
}

const char* payload_file(const std::string& agent) {
  return agent == "gemini" ? "captured_before_tool.json" : "captured_pre_tool_use.json";
}

// `sandshim hook --agent AGENT` in-process, installed as `sandshim install agent AGENT --mode
// MODE` installs it: Claude Code's session environment puts the shims first on PATH, and in wrap
// mode its shell prefix is sandshim's.
class Hook {
 public:
  explicit Hook(const Workspace& workspace) : m_workspace(workspace) {
    spdlog::set_level(spdlog::level::err);
    for (const char* agent : k_agents) {
      m_payloads[agent] =
          Json::parse(read_text(data_dir() / "hooks" / agent / payload_file(agent)));
    }
  }

  Answer ask(const std::string& command, const std::string& mode, const std::string& agent) {
    Json payload = m_payloads.at(agent);
    payload["tool_input"]["command"] = command;
    payload["cwd"] = m_workspace.project().string();
    sandshim::audit::DecisionRecord recorded;
    HookEnvironment env = environment(mode, agent, recorded);
    HookOptions options;
    options.agent = agent_named(agent);
    HookReply reply = run_hook(options, payload.dump(), env);
    return {answer_of(reply.sent), recorded.rule, recorded.reason};
  }

  // The broker settings of the policy each call loads (direct mode unless set).
  std::string broker_mode = "off";
  fs::path broker_socket;

 private:
  HookEnvironment environment(const std::string& mode, const std::string& agent,
                              sandshim::audit::DecisionRecord& recorded) {
    HookEnvironment env;
    env.load_policy = [mode, this](const fs::path&) {
      sandshim::shim::Policy policy;
      policy.hook_mode = *sandshim::shim::hook_mode_from(mode);
      policy.images = sandshim::shim::default_images();
      policy.shim_dir = m_workspace.shim_dir();
      policy.broker_mode = broker_mode;  // direct mode, whatever broker this machine may run
      policy.broker_socket = broker_socket.string();
      return policy;
    };
    env.record_decision = [&recorded](const sandshim::shim::Policy&,
                                      const sandshim::audit::DecisionRecord& record) {
      recorded = record;
      return std::string("d1");
    };
    env.complete_decision = [](const sandshim::shim::Policy&, const std::string&,
                               const sandshim::audit::DecisionCompletion&) { return true; };
    env.close_session = [](const sandshim::shim::Policy&, const std::string&, const std::string&) {
      return size_t{0};
    };
    env.sandshim = m_workspace.sandshim();
    env.agent_path = m_workspace.agent_path();
    if (agent == "claude" && mode == "wrap") {
      env.claude_shell_prefix = sandbox_shell_prefix(m_workspace.sandshim());
    }
    add_host_view(env);
    env.exists = [](const fs::path&) { return true; };
    env.now_ms = [] { return int64_t{1000}; };
    env.claude_session_env_dir = m_workspace.home() / ".claude" / "session-env";
    env.append_text = [](const fs::path&, const std::string&) { return true; };
    std::string session = session_environment_script(m_workspace.shim_dir(), "claude-code", "");
    env.session_scripts = [session](const fs::path&) { return std::vector<std::string>{session}; };
    return env;
  }

  // The real readers of the host, over the workspace's PATH.
  void add_host_view(HookEnvironment& env) {
    std::string path = env.agent_path;
    env.locate = [path](const std::string& command, const fs::path& cwd) {
      return locate_program(command, cwd, path);
    };
    env.first_line_of = [path](const std::string& command, const fs::path& cwd) {
      std::optional<fs::path> file = locate_program(command, cwd, path);
      std::optional<std::string> text = file ? read_script_file(*file) : std::nullopt;
      return text ? std::optional<std::string>(text->substr(0, text->find('\n'))) : std::nullopt;
    };
    if (!m_known) {
      m_known.emplace(path, m_workspace.sandshim());
    }
    env.known_program_of = [this](const fs::path& file) { return m_known->of(file); };
    env.read_script = read_script_file;
    // system/ stands for /, and the test's own user for root (its files are that user's); the
    // host's interpreters (/usr/bin/python3, /usr/bin/perl that #! lines name) are the host's.
    env.owned_by_system = [top = m_workspace.system_root()](const fs::path& file) {
      return sandshim::is_within(file, top) ? owned_by_system(file, SystemOwner{::geteuid(), top})
                                            : owned_by_system(file);
    };
  }

  const Workspace& m_workspace;
  std::map<std::string, Json> m_payloads;
  std::optional<KnownPrograms> m_known;
};

// `ok`: the agent runs the command through the mode's route: in deny mode allowed as written; in
// path and wrap mode Claude Code gets no objection (its session shell routes it) and Codex and
// Gemini CLI get the rewritten command. Else `allow`, `rewrite [RULE]`, `deny RULE` or
// `false-deny RULE`.
bool runs_as_routed(const std::string& mode, const std::string& agent, const Answer& answer) {
  return answer.verdict == (mode == "deny" || agent == "claude" ? "allow" : "rewrite");
}

std::string expected(const Entry& entry, const std::string& mode, const std::string& agent) {
  for (const std::string& key : {mode + "/" + agent, mode}) {
    if (auto found = entry.expect.find(key); found != entry.expect.end()) {
      return found->second;
    }
  }
  return "ok";
}

bool matches(const std::string& expectation, const std::string& mode, const std::string& agent,
             const Answer& answer) {
  if (expectation == "ok") {
    return runs_as_routed(mode, agent, answer);
  }
  std::string verdict = expectation.substr(0, expectation.find(' '));
  std::string rule =
      verdict.size() < expectation.size() ? expectation.substr(verdict.size() + 1) : answer.rule;
  verdict = verdict == "false-deny" ? "deny" : verdict;
  return answer.verdict == verdict && answer.rule == rule;
}

// The refusals that stop an interpreter (a venv's, a tool's, one reached by path): each must
// name, in backquotes, a whole command to run instead.
const std::set<std::string> k_interpreter_rules = {
    "interpreter-by-path", "interpreter-not-shimmed",
    "venv-activation",     "shebang-bypass",
    "launcher-bypass",     "interpreter-outside-sandbox",
    "cannot-rewrite",      "default-path",
    "env-cleared",         "package-install"};

// How a refusal names what to run instead: 2, an exact command (`sandshim run -- python3 -m
// pytest -q`); 1, only a command with its arguments left out (`python3 -m MODULE …`); 0, none.
// A configuration line (`hook.mode = wrap`) is no command.
int names_a_command(const std::string& reason) {
  static const std::regex code("`([a-zA-Z./'\"][^`]* [^`]+)`");
  static const std::regex config_line("[a-z_]+\\.[A-Za-z0-9_.]+ = .*");
  int best = 0;
  for (auto it = std::sregex_iterator(reason.begin(), reason.end(), code);
       it != std::sregex_iterator(); ++it) {
    std::string text = (*it)[1];
    if (std::regex_match(text, config_line)) {
      continue;
    }
    bool template_only =
        text.find("…") != std::string::npos || text.find("MODULE") != std::string::npos;
    best = std::max(best, template_only ? 1 : 2);
  }
  return best;
}

struct Tally {
  int allowed = 0;
  int rewritten = 0;
  int refused = 0;
  int refused_harmless = 0;
  int interpreter_refusals = 0;
  int naming_no_command = 0;
  int naming_exact_command = 0;
};

std::string percent(int part, int whole) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f %%", whole == 0 ? 0.0 : 100.0 * part / whole);
  return text;
}

// SANDSHIM_CORPUS_ANSWERS=FILE writes each entry's answers in the corpus's own format, to help
// review a new entry, each refusal followed by its reason's first line as a `###` comment (never
// copy answers in unread: a refusal must be judged).
void dump(std::ofstream& out, const Entry& entry, const std::map<std::string, Answer>& answers) {
  out << "=== " << entry.id << " -- " << entry.source << "\n" << entry.command << "\n";
  for (const char* mode : k_modes) {
    for (const char* agent : k_agents) {
      const Answer& a = answers.at(std::string(mode) + "/" + agent);
      if (!runs_as_routed(mode, agent, a)) {
        out << ">>> " << mode << "/" << agent << ": " << a.verdict << " " << a.rule << "\n";
        if (a.verdict == "deny") {
          out << "### " << a.reason.substr(0, a.reason.find('\n')) << "\n";
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("everyday corpus: ordinary commands get the expected answer per mode and agent",
          "[hooks][corpus]") {
  std::vector<Entry> entries = read_corpus();
  REQUIRE(entries.size() >= 300);
  std::set<std::string> ids;
  sandshim::testing::TempDir root;
  Workspace workspace(root.path());
  Hook hook(workspace);
  sandshim::testing::EnvOverride env({{"HOME", workspace.home().string()}});
  std::map<std::string, Tally> tallies;
  const char* dump_to = std::getenv("SANDSHIM_CORPUS_ANSWERS");
  std::ofstream dumped = dump_to ? std::ofstream(dump_to) : std::ofstream();
  for (const Entry& entry : entries) {
    CHECK(ids.insert(entry.id).second);
    std::map<std::string, Answer> answers;
    for (const char* mode : k_modes) {
      for (const char* agent : k_agents) {
        Answer answer = hook.ask(entry.command, mode, agent);
        answers[std::string(mode) + "/" + agent] = answer;
        std::string expectation = expected(entry, mode, agent);
        INFO(entry.id << " (" << entry.source << ") " << mode << "/" << agent << "\n"
                      << entry.command << "\nexpected: " << expectation
                      << "\ngot: " << answer.verdict << " " << answer.rule << "\n"
                      << answer.reason);
        CHECK(matches(expectation, mode, agent, answer));
        Tally& tally = tallies[mode];
        tally.allowed += answer.verdict == "allow" ? 1 : 0;
        tally.rewritten += answer.verdict == "rewrite" ? 1 : 0;
        if (answer.verdict == "deny") {
          tally.refused++;
          tally.refused_harmless += expectation.starts_with("false-deny") ? 1 : 0;
          if (k_interpreter_rules.contains(answer.rule)) {
            int named = names_a_command(answer.reason);
            tally.interpreter_refusals++;
            tally.naming_exact_command += named == 2 ? 1 : 0;
            tally.naming_no_command += named == 0 ? 1 : 0;
            CHECK(named > 0);
          }
        }
      }
    }
    if (dumped) {
      dump(dumped, entry, answers);
    }
  }
  std::cout << "everyday corpus: " << entries.size() << " commands x 3 agents per mode\n";
  for (const char* mode : k_modes) {
    const Tally& t = tallies[mode];
    int total = t.allowed + t.rewritten + t.refused;
    std::cout << "  " << mode << ": allowed " << t.allowed << ", rewritten " << t.rewritten
              << ", refused " << t.refused << " (" << percent(t.refused, total)
              << "), refused although harmless " << t.refused_harmless << " ("
              << percent(t.refused_harmless, total) << ")\n    interpreter refusals "
              << t.interpreter_refusals << ": naming an exact command to run instead "
              << t.naming_exact_command << ", only one with its arguments left out (`python3 -m "
              << "MODULE …`) "
              << t.interpreter_refusals - t.naming_exact_command - t.naming_no_command << ", none "
              << t.naming_no_command << "\n";
    // Issue 24's target is 1 % refused although harmless in every mode; each entry's answer is
    // checked above, so a new false refusal shows as a failing entry, not only here.
  }
}

// bench/corpus.sh asks the real `sandshim hook` process the same questions in the same workspace.
TEST_CASE("everyday corpus: the fixture workspace, built where bench/corpus.sh says",
          "[.corpus-workspace]") {
  const char* root = std::getenv("SANDSHIM_CORPUS_WORKSPACE");
  REQUIRE(root != nullptr);
  Workspace workspace(root);
  std::cout << "project=" << workspace.project().string() << "\nhome=" << workspace.home().string()
            << "\npath=" << workspace.agent_path() << "\n";
}

// broker.mode = auto with a broker's socket there: the runs go through the broker, whose system
// file alone names images, so a refusal names no `--image host` run (the broker would refuse it).
TEST_CASE("everyday corpus: with a broker's socket there, no refusal names a run it would refuse",
          "[hooks][corpus]") {
  sandshim::testing::TempDir root;
  Workspace workspace(root.path());
  Hook hook(workspace);
  sandshim::testing::EnvOverride env({{"HOME", workspace.home().string()}});
  hook.broker_mode = "auto";
  hook.broker_socket = root.path() / "broker.sock";
  Answer direct = hook.ask("meson setup builddir", "path", "claude");
  CHECK(direct.reason.find("--image host") != std::string::npos);  // no socket: direct mode
  sandshim::UniqueFd listener = sandshim::broker::listen_unix(hook.broker_socket, 0600, 1);
  REQUIRE(listener.valid());
  Answer brokered = hook.ask("meson setup builddir", "path", "claude");
  CHECK(brokered.verdict == "deny");
  CHECK(brokered.rule == direct.rule);
  CHECK(brokered.reason.find("--image host") == std::string::npos);
  hook.broker_mode = "required";
  hook.broker_socket = root.path() / "absent.sock";
  CHECK(hook.ask("meson setup builddir", "path", "claude").reason.find("--image host") ==
        std::string::npos);
}
