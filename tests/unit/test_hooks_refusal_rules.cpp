// Issue 24, "a refusal is a way forward": every refusal names its rule, the configuration line
// that lifts it (a real key, with a value the key accepts) or says that none does; one route
// gets one answer whichever tool takes it (`pip install` and `uv pip install`).

#include <catch2/catch.hpp>
#include <map>
#include <regex>
#include <set>

#include "hooks/decide.hpp"
#include "hooks/refusal_rules.hpp"
#include "policy/key_table.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;
namespace fs = std::filesystem;

namespace {

const fs::path k_project = "/work/proj";

// pip and poetry as their installers leave them (a #! naming the host's python), uv a binary;
// the project's `.venv` made by the image's python (Debian bookworm's 3.11 in /usr/bin).
std::optional<std::string> first_line(const std::string& command) {
  static const std::map<std::string, std::string> files = {
      {"pip", "#!/usr/bin/python3"},
      {"pip3", "#!/usr/bin/python3"},
      {"poetry", "#!/home/u/.local/pipx/venvs/poetry/bin/python"},
      {"pipx", "#!/usr/bin/python3"},
      {"pytest", "#!/usr/bin/python3"},
      {"virtualenv", "#!/usr/bin/python3"},
      {"npm", "#!/usr/bin/env node"},
      {"pipenv-env", "#!/usr/bin/env python3"},
      {".venv/bin/pytest", "#!/work/proj/.venv/bin/python"},
  };
  auto found = files.find(command);
  return found == files.end() ? std::nullopt : std::optional<std::string>(found->second);
}

DecisionInputs inputs(const std::string& mode, bool with_venv = true) {
  DecisionInputs in = sandshim::testing::decision_inputs(mode);
  in.first_line_of = first_line;
  in.cwd = k_project;
  in.workspace = k_project;
  in.protected_paths =
      ProtectedPaths(std::vector<ProtectedPlace>{{"/home/u/.bashrc", false, "a protected file"}});
  in.python_image = "sandshim/python:bookworm";
  in.read_script = [with_venv](const fs::path& file) -> std::optional<std::string> {
    if (with_venv && file == k_project / ".venv" / "pyvenv.cfg") {
      return "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n";
    }
    return std::nullopt;
  };
  return in;
}

// The reason without the installer's own name: what must be the same for every tool.
std::string without(std::string text, const std::string& name) {
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name)) {
    text.replace(at, name.size(), "TOOL");
  }
  return text;
}

// Every `key = value` a refusal names must be a key the user's config accepts with that value.
void check_config_lines(const std::string& reason) {
  static const std::regex line("`([a-z_]+\\.[A-Za-z0-9_.]+) = ([^`]+)`");
  for (auto it = std::sregex_iterator(reason.begin(), reason.end(), line);
       it != std::sregex_iterator(); ++it) {
    std::string key = (*it)[1];
    std::string value = (*it)[2];
    INFO(key << " = " << value);
    auto [found, subkey] = sandshim::shim::find_key(key);
    REQUIRE(found != nullptr);
    sandshim::shim::Policy policy;
    CHECK_FALSE(found->set(policy, subkey, value).has_value());
  }
}

}  // namespace

TEST_CASE("pip install and uv pip install get one answer: the same rule, the same text",
          "[hooks][refusal]") {
  for (const char* mode : {"path", "deny"}) {
    INFO(mode);
    Decision pip = decide("pip install -r requirements.txt", inputs(mode));
    Decision uv = decide("uv pip install -r requirements.txt", inputs(mode));
    CHECK(pip.verdict == Verdict::deny);
    CHECK(pip.rule == "package-install");
    CHECK(uv.rule == pip.rule);
    CHECK(without(uv.reason, "`uv pip install`") == without(pip.reason, "`pip install`"));
    CHECK(pip.reason.find("`/usr/local/bin/sandshim run -- .venv/bin/python3 -m pip install -r "
                          "requirements.txt`") != std::string::npos);
    CHECK(pip.reason.find("`sandbox.writable = .venv`") != std::string::npos);
    CHECK(pip.reason.find("Rule `package-install`; `hook.mode = wrap` in the user's config "
                          "lifts it") != std::string::npos);
    CHECK(std::count(pip.reason.begin(), pip.reason.end(), '\n') == 0);
    check_config_lines(pip.reason);
  }
}

TEST_CASE("every route that installs Python packages on the host names pip's equivalent",
          "[hooks][refusal]") {
  const std::pair<const char*, const char*> routes[] = {
      {"pip3 install --user requests", "-m pip install --user requests`"},
      {"pip uninstall -y six", "-m pip uninstall -y six`"},
      {"uv pip sync requirements.txt", "-m pip install -r requirements.txt`"},
      {"uv sync", "-m pip install -e .`"},
      {"uv add httpx", "-m pip install httpx`"},
      {"uv remove httpx", "-m pip uninstall -y httpx`"},
      {"uv --quiet add httpx", "-m pip install httpx`"},
      {"poetry add requests", "-m pip install requests`"},
      {"poetry install", "-m pip install -e .`"},
      {"uv add --dev pytest", "-m pip install …`"},
  };
  for (const auto& [command, named] : routes) {
    Decision decision = decide(command, inputs("path"));
    INFO(command << "\n-> " << decision.rule << ": " << decision.reason);
    CHECK(decision.rule == "package-install");
    CHECK(decision.reason.find(std::string("run -- .venv/bin/python3 ") + named) !=
          std::string::npos);
  }
  // Nothing in a venv does a tool install's job: said, never a wrong command.
  for (const char* command : {"uv tool install ruff", "pipx install black"}) {
    Decision decision = decide(command, inputs("path"));
    INFO(command << "\n-> " << decision.reason);
    CHECK(decision.rule == "package-install");
    CHECK(decision.reason.find("Nothing in the sandbox installs a tool for the host") !=
          std::string::npos);
  }
  // Without a venv the image runs, the refusal says how to get one, with the same pip command.
  Decision none = decide("uv pip install httpx", inputs("path", false));
  CHECK(none.rule == "package-install");
  CHECK(none.reason.find("`/usr/bin/python3 -m venv .venv`, `sandbox.writable = .venv`") !=
        std::string::npos);
  CHECK(none.reason.find("run -- .venv/bin/python3 -m pip install httpx`") != std::string::npos);
  check_config_lines(none.reason);
}

TEST_CASE("a venv's python and its scripts are refused with the exact sandboxed run",
          "[hooks][refusal]") {
  for (const char* mode : {"path", "deny"}) {
    DecisionInputs in = inputs(mode);
    in.can_rewrite = false;  // Claude Code: no rewrite into the wrap image
    Decision script = decide(".venv/bin/pytest -q tests", in);
    INFO(mode << ": " << script.reason);
    CHECK(script.rule == "shebang-bypass");
    CHECK(script.reason.find("`/usr/local/bin/sandshim run -- .venv/bin/python3 .venv/bin/pytest "
                             "-q tests`") != std::string::npos);
    Decision python = decide(".venv/bin/python -m pytest -q", in);
    INFO(python.reason);
    CHECK(python.rule == "venv-by-path");
    CHECK(python.reason.find("`/usr/local/bin/sandshim run -- .venv/bin/python3 -m pytest -q`") !=
          std::string::npos);
  }
  // A host tool's #! (no venv) keeps the interpreter by name.
  CHECK(decide("pytest -q", inputs("path")).reason.find("python3 -m MODULE") != std::string::npos);
}

TEST_CASE("a system tool's script is refused with the same script in host mode",
          "[hooks][refusal]") {
  DecisionInputs in = inputs("path", false);
  in.locate = [](const std::string& command) -> std::optional<fs::path> {
    return command == "pytest" ? fs::path("/usr/bin/pytest") : fs::path("/home/u/bin/" + command);
  };
  in.owned_by_system = [](const fs::path& file) { return file.string().starts_with("/usr/"); };
  Decision system = decide("pytest -q tests", in);
  INFO(system.reason);
  CHECK(system.rule == "shebang-bypass");
  CHECK(system.reason.find(
            "`/usr/local/bin/sandshim run --wrap-shell --image host -- /usr/bin/python3 "
            "/usr/bin/pytest -q tests`") != std::string::npos);
  check_config_lines(system.reason);
  // A script the user could have written, or a broker that names every image: no host mode.
  CHECK(decide("pip3 list", in).reason.find("python3 -m MODULE") != std::string::npos);
  in.image_choice = false;
  CHECK(decide("pytest -q", in).reason.find("python3 -m MODULE") != std::string::npos);
}

TEST_CASE("virtualenv from the user's tools: python3 -m venv in sandshim -c, where it may write",
          "[hooks][refusal]") {
  DecisionInputs in = inputs("path", false);
  in.wrap_shell_writes = true;
  Decision made = decide("virtualenv venv", in);
  INFO(made.reason);
  CHECK(made.rule == "shebang-bypass");
  CHECK(made.reason.find("instead: `/usr/local/bin/sandshim -c 'python3 -m venv venv'`") !=
        std::string::npos);
  check_config_lines(made.reason);
  // Its options are not venv's; a shell that may not write would make nothing (a broker's ro).
  CHECK(decide("virtualenv -p python3.12 venv", in).reason.find("-m venv") == std::string::npos);
  in.wrap_shell_writes = false;
  CHECK(decide("virtualenv venv", in).reason.find("-m venv") == std::string::npos);
  CHECK(decide("virtualenv venv", in).reason.find("python3 -m MODULE") != std::string::npos);
}

TEST_CASE("what installs nothing on the host stays as it was", "[hooks][refusal]") {
  // uv's verbs that install nothing, pip run through the shims (#!/usr/bin/env python3), npm.
  for (const char* command :
       {"uv lock", "uv venv", "uv pip compile requirements.in -o requirements.txt", "uv --version",
        "uv pip list", "pipenv-env install requests", "npm install", "python3 -m pip install x"}) {
    Decision decision = decide(command, inputs("path"));
    INFO(command << "\n-> " << decision.rule << ": " << decision.reason);
    CHECK(decision.verdict == Verdict::rewrite);
  }
  CHECK(decide("uv run pytest", inputs("path")).rule == "launcher-bypass");
  CHECK(decide("pip list", inputs("path")).rule == "shebang-bypass");
  // Wrap mode runs the whole command in the sandbox: no rule of path mode applies.
  CHECK(decide("uv pip install httpx", inputs("wrap")).verdict == Verdict::rewrite);
  CHECK(decide("pip install httpx", inputs("wrap")).verdict == Verdict::rewrite);
}

TEST_CASE("every refusal names its rule and the configuration line that lifts it",
          "[hooks][refusal]") {
  const std::pair<const char*, const char*> commands[] = {
      {"if true; then echo", "path"},
      {"eval \"$X\"", "path"},
      {"PATH=/tmp/bin python3 x.py", "path"},
      {"DOCKER_HOST=tcp://x ls", "path"},
      {"hash -p /usr/bin/python3 py", "path"},
      {"/usr/local/bin/sandshim run --network bridge -- python3 x", "path"},
      {"sandshim install", "path"},
      {"sudo ls", "path"},
      {"$CMD x", "path"},
      {"/usr/bin/python3 x.py", "path"},
      {"docker ps", "path"},
      {"/lib64/ld-linux-x86-64.so.2 /bin/ls", "path"},
      {"git -c core.pager=less log", "path"},
      {"GIT_SSH_COMMAND=x git fetch", "path"},
      {"echo x >> ~/.bashrc", "path"},
      {"read f; echo x > \"$f\"", "path"},
      {"uv run pytest", "path"},
      {"pytest -q", "path"},
      {"pip install x", "path"},
      {"env -i python3 x", "path"},
      {"command -p python3 x", "path"},
      {"exec -a x python3", "path"},
      {"python3.11 x.py", "path"},
      {"python3 x.py", "deny"},
      {"python3 x.py", "path-norewrite"},
      {"python3 x.py", "nonsense"},
  };
  std::set<std::string> rules;
  for (const auto& [command, mode] : commands) {
    DecisionInputs in = inputs(mode == std::string("path-norewrite") ? "path" : mode);
    in.can_rewrite = mode != std::string("path-norewrite");
    Decision decision = decide(command, in);
    INFO(mode << ": " << command << "\n-> " << decision.rule << ": " << decision.reason);
    REQUIRE(decision.verdict == Verdict::deny);
    rules.insert(decision.rule);
    CHECK(decision.reason.find("Rule `" + decision.rule + "`; ") != std::string::npos);
    std::string_view line = lifting_line(decision.rule);
    CHECK(decision.reason.find(line.empty() ? std::string("no configuration lifts it")
                                            : "`" + std::string(line) +
                                                  "` in the user's config "
                                                  "lifts it") != std::string::npos);
    check_config_lines(decision.reason);
  }
  CHECK(rules.size() >= 24);
}

TEST_CASE("the rule table names only keys the configuration has", "[hooks][refusal]") {
  for (const char* rule :
       {"unanalysable", "shebang-bypass", "package-install", "interpreter-not-shimmed",
        "interpreter-outside-sandbox", "unknown-mode", "audit-unavailable", "self-tamper"}) {
    std::string footer = rule_footer(rule);
    INFO(footer);
    CHECK(footer.starts_with("Rule `" + std::string(rule) + "`; "));
    check_config_lines(footer);
  }
  CHECK(rule_footer("self-tamper") ==
        "Rule `self-tamper`; no configuration lifts it (the sandbox's setup is the user's).");
  CHECK(with_rule_footer("sandshim: x", "loader") ==
        "sandshim: x. Rule `loader`; `hook.mode = wrap` in the user's config lifts it (the whole "
        "command then runs in the sandbox).");
}
