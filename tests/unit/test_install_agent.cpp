#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "hooks/rewrite.hpp"
#include "install/agent_install.hpp"
#include "install/agent_settings.hpp"
#include "install/codex_route.hpp"
#include "install/gemini_env.hpp"
#include "install/skill.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::install;
using sandshim::testing::EnvOverride;
using sandshim::testing::read_text;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

namespace {

// Runs `sandshim install agent ARGS` with stdout captured.
std::string install_agent(const std::vector<std::string>& args) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    install_agent_main(args);
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return captured.str();
}

struct Sandbox {
  TempDir dir;
  fs::path project = dir / "project";
  EnvOverride env{{"HOME", (dir / "home").string()},
                  {"XDG_CONFIG_HOME", (dir / "config").string()},
                  {"XDG_STATE_HOME", (dir / "state").string()},
                  {"XDG_DATA_HOME", (dir / "data").string()},
                  {"CLAUDE_CONFIG_DIR", (dir / "home" / ".claude").string()},
                  {"CODEX_HOME", (dir / "home" / ".codex").string()}};
  Sandbox() {
    fs::create_directories(project);
    fs::create_directories(dir / "home");
  }
};

mode_t mode_of(const fs::path& file) {
  struct stat st {};
  ::stat(file.c_str(), &st);
  return st.st_mode & 07777;
}

// Every file below `root`, with its bytes.
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    files[entry.path().lexically_relative(root).string()] =
        entry.is_regular_file() ? read_text(entry.path()) : "<dir>";
  }
  return files;
}

}  // namespace

TEST_CASE("install agent writes settings and skills, and uninstall removes exactly them",
          "[install][agent]") {
  Sandbox box;
  write_text(box.project / "README.md", "hello\n");
  auto before = tree(box.project);
  std::string report = install_agent({"claude", "--project", box.project.string()});
  CHECK(report.find("created   .claude/settings.json") != std::string::npos);
  CHECK(report.find("created   .claude/skills/sandshim/SKILL.md") != std::string::npos);
  CHECK(report.find("created   .agents/skills/sandshim/SKILL.md") != std::string::npos);
  CHECK(report.find("workspace trust") != std::string::npos);
  std::string settings = read_text(box.project / ".claude/settings.json");
  CHECK(settings.find(sandshim::self_executable().string() + " hook --agent claude") !=
        std::string::npos);

  CHECK(report.find("rewrite-approval") == std::string::npos);
  CHECK(report.find("Nothing is approved or added to your permission rules") != std::string::npos);

  CHECK(install_agent({"claude", "--project", box.project.string()})
            .find("unchanged .claude/settings.json") != std::string::npos);
  std::string codex = install_agent({"codex", "--project", box.project.string()});
  CHECK(codex.find("open `/hooks` and trust") != std::string::npos);
  CHECK(codex.find("`codex exec` (CI) cannot review hooks: run `sandshim doctor`") !=
        std::string::npos);
  CHECK(codex.find("network_access = true") != std::string::npos);
  install_agent({"claude", "--project", box.project.string(), "--uninstall"});
  CHECK(fs::exists(box.project / ".agents/skills/sandshim/SKILL.md"));  // codex still uses it
  install_agent({"codex", "--project", box.project.string(), "--uninstall"});
  CHECK(tree(box.project) == before);
}

TEST_CASE("install agent keeps a user's empty settings file on uninstall", "[install][agent]") {
  Sandbox box;
  write_text(box.project / ".cursor/hooks.json", "{\"version\": 1}");
  install_agent({"cursor", "--project", box.project.string()});
  install_agent({"cursor", "--project", box.project.string(), "--uninstall"});
  CHECK(read_text(box.project / ".cursor/hooks.json") == "{\"version\": 1}");
}

TEST_CASE("install agent --user writes below HOME", "[install][agent]") {
  Sandbox box;
  install_agent({"gemini", "--user"});
  CHECK(fs::exists(box.dir / "home/.gemini/settings.json"));
  CHECK(fs::exists(box.dir / "home/.agents/skills/sandshim/SKILL.md"));
  CHECK(fs::exists(box.dir / "home/.claude/skills/sandshim/SKILL.md"));
  install_agent({"gemini", "--user", "--uninstall"});
  CHECK_FALSE(fs::exists(box.dir / "home/.gemini/settings.json"));
  CHECK(fs::is_empty(box.dir / "home"));
}

TEST_CASE("install agent keeps permissions and symlinks", "[install][agent]") {
  Sandbox box;
  fs::path real = box.dir / "dotfiles/claude-settings.json";
  write_text(real, "{\n  \"model\": \"opus\"\n}\n");
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_directories(box.project / ".claude");
  fs::create_symlink(real, box.project / ".claude/settings.json");
  install_agent({"claude", "--project", box.project.string()});
  CHECK(fs::is_symlink(box.project / ".claude/settings.json"));
  CHECK(mode_of(real) == 0600);
  CHECK(read_text(real).find("hook --agent claude") != std::string::npos);
}

TEST_CASE("install agent refuses invalid JSON and leaves it untouched", "[install][agent]") {
  Sandbox box;
  std::string broken = "{\n  \"model\": \"opus\",\n}\n";
  write_text(box.project / ".claude/settings.json", broken);
  try {
    install_agent({"claude", "--project", box.project.string()});
    FAIL("accepted invalid JSON");
  } catch (const sandshim::Fatal& e) {
    std::string message = e.what();
    CHECK(message.find("line 3") != std::string::npos);
    CHECK(message.find("nothing was changed") != std::string::npos);
    CHECK(message.find("\"PreToolUse\"") != std::string::npos);  // the entries to add by hand
  }
  CHECK(read_text(box.project / ".claude/settings.json") == broken);
  CHECK_FALSE(fs::exists(box.project / ".claude/skills"));
}

TEST_CASE("install agent --dry-run writes nothing", "[install][agent]") {
  Sandbox box;
  std::string report = install_agent({"cursor", "--project", box.project.string(), "--dry-run"});
  CHECK(report.find("dry run") != std::string::npos);
  CHECK(report.find("created   .cursor/hooks.json") != std::string::npos);
  CHECK(fs::is_empty(box.project));
}

TEST_CASE("install agent rejects unknown agents and conflicting scopes", "[install][agent]") {
  Sandbox box;
  CHECK_THROWS_AS(install_agent({"vim", "--project", box.project.string()}), sandshim::Fatal);
  CHECK_THROWS_AS(install_agent({"claude", "--user", "--project", box.project.string()}),
                  sandshim::Fatal);
  CHECK_THROWS_AS(install_agent({}), sandshim::Fatal);
  CHECK(install_agent({"--help"}).find("sandshim install agent NAME") != std::string::npos);
}

TEST_CASE("the skill holds only spec frontmatter and names its folder", "[install][skill]") {
  sandshim::shim::Policy policy;
  policy.images = {{"python3", "i"}, {"node", "i"}};
  std::string markdown = skill_markdown(policy);
  REQUIRE(markdown.starts_with("---\n"));
  size_t end = markdown.find("\n---\n", 4);
  REQUIRE(end != std::string::npos);
  std::istringstream frontmatter(markdown.substr(4, end - 4));
  std::map<std::string, std::string> keys;
  for (std::string line; std::getline(frontmatter, line);) {
    keys[line.substr(0, line.find(':'))] = line.substr(line.find(':') + 2);
  }
  const std::set<std::string> spec = {"name",          "description", "license",
                                      "compatibility", "metadata",    "allowed-tools"};
  for (const auto& [key, value] : keys) {
    CHECK(spec.contains(key));
  }
  CHECK(keys["name"] == "sandshim");
  CHECK(keys["description"].size() <= 1024);
  CHECK(keys["compatibility"].size() <= 500);
  for (const fs::path& directory : skill_directories("/p", false)) {
    CHECK(directory.filename() == keys["name"]);
  }
  for (const char* needle :
       {"124", "137", "125", "`python3`", "`node`", "by path", "ask the user", "memory=512m"}) {
    INFO(needle);
    CHECK(markdown.find(needle) != std::string::npos);
  }
}

TEST_CASE("a SKILL.md sandshim did not write is left alone", "[install][skill]") {
  TempDir dir;
  write_text(dir / "skills/sandshim/SKILL.md", "---\nname: sandshim\n---\nmine\n");
  auto installed = install_skill({dir / "skills/sandshim"}, "new", false);
  CHECK(installed.at(0).change == Change::unchanged);
  CHECK_FALSE(installed.at(0).note.empty());
  CHECK(remove_skill({dir / "skills/sandshim"}, false).at(0).change == Change::unchanged);
  CHECK(read_text(dir / "skills/sandshim/SKILL.md") == "---\nname: sandshim\n---\nmine\n");
}

namespace {

// The broker required (its socket in the box) and no engine socket this uid reaches.
EnvOverride broker_required(const Sandbox& box) {
  return EnvOverride{{"SANDSHIM_BROKER", "required"},
                     {"SANDSHIM_BROKER_SOCKET", (box.dir / "broker.sock").string()},
                     {"DOCKER_HOST", "unix://" + (box.dir / "no-engine.sock").string()}};
}

}  // namespace

TEST_CASE(
    "with Claude Code's sandbox on and the broker required, the install allows unix sockets "
    "and uninstall takes out exactly that",
    "[install][agent][claude-sandbox]") {
  Sandbox box;
  EnvOverride broker = broker_required(box);
  std::string user_settings = "{\n  \"sandbox\": {\"enabled\": true}\n}\n";
  write_text(box.dir / "home/.claude/settings.json", user_settings);
  std::string project_settings = "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]}\n}\n";
  write_text(box.project / ".claude/settings.json", project_settings);

  std::string report = install_agent({"claude", "--project", box.project.string()});
  INFO(report);
  CHECK(report.find("lets its commands reach the broker's socket " +
                    (box.dir / "broker.sock").string()) != std::string::npos);
  nlohmann::json installed =
      nlohmann::json::parse(read_text(box.project / ".claude/settings.json"));
  CHECK(installed["sandbox"]["network"]["allowAllUnixSockets"] == true);
  CHECK(installed["permissions"] == nlohmann::json::parse(project_settings)["permissions"]);
  CHECK(read_text(box.dir / "home/.claude/settings.json") == user_settings);
  CHECK(install_agent({"claude", "--project", box.project.string()})
            .find("unchanged .claude/settings.json") != std::string::npos);

  install_agent({"claude", "--project", box.project.string(), "--uninstall"});
  CHECK(read_text(box.project / ".claude/settings.json") == project_settings);
}

TEST_CASE(
    "the install leaves a user's own allowAllUnixSockets, and removes its own once the "
    "sandbox is off",
    "[install][agent][claude-sandbox]") {
  Sandbox box;
  EnvOverride broker = broker_required(box);
  std::string own =
      "{\"sandbox\": {\"enabled\": true, \"network\": {\"allowAllUnixSockets\": false}}}";
  write_text(box.project / ".claude/settings.json", own);
  std::string report = install_agent({"claude", "--project", box.project.string()});
  CHECK(report.find("allowAllUnixSockets is false in") != std::string::npos);
  install_agent({"claude", "--project", box.project.string(), "--uninstall"});
  CHECK(read_text(box.project / ".claude/settings.json") == own);

  write_text(box.dir / "home/.claude/settings.json", "{\"sandbox\": {\"enabled\": true}}");
  fs::remove(box.project / ".claude/settings.json");
  install_agent({"claude", "--project", box.project.string()});
  CHECK(read_text(box.project / ".claude/settings.json").find("allowAllUnixSockets") !=
        std::string::npos);
  write_text(box.dir / "home/.claude/settings.json", "{\"sandbox\": {\"enabled\": false}}");
  install_agent({"claude", "--project", box.project.string()});
  CHECK(read_text(box.project / ".claude/settings.json").find("allowAllUnixSockets") ==
        std::string::npos);
}

namespace {

// What bash prints for `command` with BASH_ENV naming `script` and PATH set to `path`.
std::string bash_with_env(const fs::path& script, const std::string& path,
                          const std::string& command) {
  std::string line = "env -i BASH_ENV=" + sandshim::shell_quote(script.string()) +
                     " PATH=" + sandshim::shell_quote(path) + " /bin/bash -c " +
                     sandshim::shell_quote(command);
  FILE* pipe = ::popen(line.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) {
    out.append(buffer, n);
  }
  ::pclose(pipe);
  return out;
}

}  // namespace

TEST_CASE("install agent gemini puts the shims first on its shell's PATH through BASH_ENV",
          "[install][agent]") {
  Sandbox box;
  auto before = tree(box.project);
  std::string out = install_agent({"gemini", "--project", box.project.string()});
  CHECK_THAT(out, Catch::Contains("created   .gemini/.env  (BASH_ENV puts the shims first"));
  std::string env = read_text(box.project / ".gemini/.env");
  fs::path script = gemini_bash_env_script();
  CHECK_THAT(env, Catch::Contains("\nBASH_ENV=" + script.string() + "\n"));
  // Gemini CLI runs `bash -c` with it: the shims come first, once, and BASH_ENV is not passed on.
  fs::path shims = box.dir / "data" / "sandshim" / "bin";
  CHECK(bash_with_env(script, "/usr/bin:/bin", "echo \"$PATH|${BASH_ENV-unset}\"") ==
        shims.string() + ":/usr/bin:/bin|unset\n");
  CHECK(bash_with_env(script, shims.string() + ":/bin", "echo \"$PATH\"") ==
        shims.string() + ":/bin\n");
  // The command string is kept for the shims, to find the hook's decision for it.
  CHECK(bash_with_env(script, "/bin", "printenv SANDSHIM_SHELL_COMMAND") ==
        "printenv SANDSHIM_SHELL_COMMAND\n");
  CHECK_THAT(install_agent({"gemini", "--project", box.project.string()}),
             Catch::Contains("unchanged .gemini/.env"));
  install_agent({"gemini", "--project", box.project.string(), "--uninstall"});
  CHECK(tree(box.project) == before);
}

TEST_CASE("install agent gemini keeps the user's .env lines and BASH_ENV", "[install][agent]") {
  Sandbox box;
  write_text(box.project / ".gemini/.env", "GEMINI_MODEL=flash\n");
  install_agent({"gemini", "--project", box.project.string()});
  CHECK_THAT(read_text(box.project / ".gemini/.env"),
             Catch::StartsWith("GEMINI_MODEL=flash\n# sandshim: ") && Catch::Contains("BASH_ENV="));
  install_agent({"gemini", "--project", box.project.string(), "--uninstall"});
  CHECK(read_text(box.project / ".gemini/.env") == "GEMINI_MODEL=flash\n");

  write_text(box.project / ".gemini/.env", "export BASH_ENV=/home/me/env.sh\n");
  std::string out = install_agent({"gemini", "--project", box.project.string()});
  CHECK_THAT(out, Catch::Contains("this file sets BASH_ENV already"));
  CHECK(read_text(box.project / ".gemini/.env") == "export BASH_ENV=/home/me/env.sh\n");
}

TEST_CASE("install agent gemini does not hide the project's own .env", "[install][agent]") {
  Sandbox box;
  write_text(box.project / ".env", "DATABASE=dev\n");
  std::string out = install_agent({"gemini", "--project", box.project.string()});
  // Gemini CLI loads the first of .gemini/.env and .env it finds: a new one would hide this.
  CHECK_THAT(out, Catch::Contains("skipped   .gemini/.env") &&
                      Catch::Contains("would hide this project's own .env"));
  CHECK_FALSE(fs::exists(box.project / ".gemini/.env"));
}

TEST_CASE("install agent codex writes its routing script and the rule that allows it",
          "[install][agent]") {
  Sandbox box;
  auto before = tree(box.project);
  std::string out = install_agent({"codex", "--project", box.project.string()});
  fs::path rules = box.dir / "home/.codex/rules/sandshim.rules";
  fs::path script = box.dir / "state/sandshim/codex-route.sh";
  CHECK_THAT(out, Catch::Contains("created") && Catch::Contains("sandshim.rules"));
  CHECK(read_text(rules) == codex_route_rule(script));
  CHECK(read_text(script) ==
        sandshim::hooks::routing_script_text(box.dir / "data" / "sandshim" / "bin"));
  CHECK_THAT(install_agent({"codex", "--project", box.project.string()}),
             Catch::Contains("unchanged ") && Catch::Contains("sandshim.rules"));
  // The rules file is the user's: a project's uninstall leaves it, the user's removes it.
  install_agent({"codex", "--project", box.project.string(), "--uninstall"});
  CHECK(tree(box.project) == before);
  CHECK(fs::exists(rules));
  install_agent({"codex", "--user"});
  install_agent({"codex", "--user", "--uninstall"});
  CHECK_FALSE(fs::exists(rules));
}
