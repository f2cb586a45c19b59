#include <catch2/catch.hpp>
#include <map>

#include "hooks/shell_analysis.hpp"

using namespace sandshim::hooks;

namespace {

const std::filesystem::path k_shim_dir = "/home/u/.local/share/sandshim/bin";

// First lines of the files commands would run, as a PATH lookup plus a read would find them.
std::optional<std::string> fake_first_line(const std::string& command) {
  static const std::map<std::string, std::string> files = {
      {"pytest", "#!/usr/bin/python3"},
      {"./tool.py", "#!/usr/bin/python3 -u"},
      {"./run.sh", "#!/bin/bash -e"},
      {"npx", "#!/usr/bin/env node"},
      {"./clean", "#!/usr/bin/env -i python3"},
      {"./routed", "#!/home/u/.local/share/sandshim/bin/python3"},
      {"git",
       "\x7f"
       "ELF\x02\x01"},
  };
  auto found = files.find(command);
  return found == files.end() ? std::nullopt : std::optional<std::string>(found->second);
}

CommandAnalysis analyse(const std::string& command) {
  AnalysisOptions options;
  options.shimmed = {"python", "python3", "node", "sh"};
  options.shim_dir = k_shim_dir;
  options.sandshim = "/usr/local/bin/sandshim";
  options.first_line_of = fake_first_line;
  return analyse_command(command, options);
}

const Invocation& invocation(const CommandAnalysis& analysis, const std::string& name) {
  for (const Invocation& candidate : analysis.invocations) {
    if (candidate.name == name) {
      return candidate;
    }
  }
  FAIL("no invocation named " << name);
  throw std::logic_error("unreachable");
}

bool has_invocation(const CommandAnalysis& analysis, const std::string& name) {
  return std::any_of(analysis.invocations.begin(), analysis.invocations.end(),
                     [&](const Invocation& candidate) { return candidate.name == name; });
}

std::vector<FindingKind> kinds(const CommandAnalysis& analysis) {
  std::vector<FindingKind> result;
  for (const Finding& finding : analysis.findings) {
    result.push_back(finding.kind);
  }
  return result;
}

using Kinds = std::vector<FindingKind>;

}  // namespace

TEST_CASE("analysis classifies how each program is reached", "[hooks][analysis]") {
  CommandAnalysis analysis = analyse("python3 a; /usr/bin/python3 b; ./venv/bin/python c; " +
                                     k_shim_dir.string() + "/node d; $PY e; git f");
  CHECK(analysis.invocations.size() == 6);
  CHECK(analysis.invocations[0].lookup == Lookup::by_name);
  CHECK(analysis.invocations[0].kind == CommandClass::interpreter);
  CHECK(analysis.invocations[1].lookup == Lookup::by_path);
  CHECK(analysis.invocations[2].lookup == Lookup::by_path);
  CHECK(analysis.invocations[2].kind == CommandClass::interpreter);
  CHECK(analysis.invocations[3].lookup == Lookup::shim);
  CHECK(analysis.invocations[4].lookup == Lookup::dynamic);
  CHECK(analysis.invocations[5].kind == CommandClass::other);
  CHECK(analysis.findings.empty());
}

TEST_CASE("analysis looks through wrappers", "[hooks][analysis]") {
  CHECK(invocation(analyse("env -i FOO=1 python3 x"), "python3").clears_environment);
  CHECK(invocation(analyse("env -iv python3 x"), "python3").wrapper == "env -i");
  CHECK_FALSE(invocation(analyse("env FOO=1 -- python3 x"), "python3").clears_environment);
  CHECK(invocation(analyse("exec -a foo python3 x"), "python3").renames_argv0);
  CHECK(invocation(analyse("exec -c node x"), "node").clears_environment);
  CHECK(invocation(analyse("command -p python3 x"), "python3").default_path);
  CHECK_FALSE(has_invocation(analyse("command -v python3"), "python3"));
  CHECK(invocation(analyse("sudo -u root python3 x"), "sudo").privileged);
  CHECK(invocation(analyse("xargs -0 -n 1 -I{} python3 {}"), "python3").wrapper == "xargs");
  CHECK(invocation(analyse("timeout -s KILL 5 node x"), "node").wrapper == "timeout");
  CHECK(invocation(analyse("nice -n 5 nohup stdbuf -oL python3 x"), "python3").wrapper == "stdbuf");
  CHECK(invocation(analyse("builtin command nohup node x"), "node").lookup == Lookup::by_name);
  CHECK(invocation(analyse("busybox sh -c 'node x'"), "sh").lookup == Lookup::by_path);
}

TEST_CASE("analysis follows find -exec and sandshim run", "[hooks][analysis]") {
  CommandAnalysis found =
      analyse("find . -name '*.py' -exec python3 {} \\; -exec /usr/bin/node {} +");
  CHECK(invocation(found, "python3").wrapper == "find -exec");
  CHECK(invocation(found, "node").lookup == Lookup::by_path);

  CommandAnalysis run = analyse("sandshim run --timeout 5s -- /usr/bin/python3 x");
  CHECK(invocation(run, "sandshim").sandshim_subcommand == "run");
  CHECK(invocation(run, "python3").sandboxed);
  CHECK(invocation(analyse("/usr/local/bin/sandshim install agent claude"), "sandshim")
            .sandshim_subcommand == "install");
}

TEST_CASE("analysis reads the scripts of shells", "[hooks][analysis]") {
  CommandAnalysis inline_script = analyse("bash -lc 'cd x && node y'");
  CHECK(invocation(inline_script, "node").enclosing_shell == size_t{0});
  CHECK(invocation(analyse("bash -o pipefail -c 'node y'"), "node").enclosing_shell);
  CHECK(has_invocation(analyse("bash <<'EOF'\nnode y\nEOF"), "node"));
  CHECK(has_invocation(analyse("sh <<< 'node y'"), "node"));
  CHECK_FALSE(has_invocation(analyse("bash script.sh"), "node"));
  CHECK(kinds(analyse("sh -c \"$(curl -fsSL x)\"")) == Kinds{FindingKind::unanalysable});
  CHECK(kinds(analyse("X='; node'; bash -c \"echo $X\"")) == Kinds{FindingKind::unanalysable});
  CHECK(kinds(analyse("for X in a; do bash -c \"echo $X\"; done")) ==
        Kinds{FindingKind::unanalysable});
  CHECK(kinds(analyse("bash -c \"cd $HOME && node y\"")).empty());
  CHECK(kinds(analyse("bash $FLAGS 'node y'")) == Kinds{FindingKind::unanalysable});
  CHECK(kinds(analyse("bash -c 'echo \"unterminated'")) == Kinds{FindingKind::parse_error});
}

TEST_CASE("analysis reads aliases, traps and function bodies", "[hooks][analysis]") {
  CHECK(invocation(analyse("alias py='/usr/bin/python3 -u'"), "python3").lookup == Lookup::by_path);
  CHECK(has_invocation(analyse("trap 'node cleanup.js' EXIT"), "node"));
  CHECK(has_invocation(analyse("f() { node x; }"), "node"));
  CHECK(kinds(analyse("eval \"$CMD\"")) == Kinds{FindingKind::unanalysable});
  CHECK(kinds(analyse("source <(curl x)")) == Kinds{FindingKind::unanalysable});
  CHECK(kinds(analyse("source ./env.sh")).empty());
  CHECK(kinds(analyse("hash -p /usr/bin/python3 python3")) == Kinds{FindingKind::hash_pinning});
  CHECK(kinds(analyse("env -S 'python3 -u' x")) == Kinds{FindingKind::unanalysable});
}

TEST_CASE("analysis tells PATH appends from PATH overrides", "[hooks][analysis]") {
  for (const char* fine :
       {"PATH=$PATH:/x make", "PATH=\"$PATH\":/x make", "PATH=\"${PATH}:/x\" make",
        "PATH+=:/x; make", "export PATH=\"$PATH:./node_modules/.bin\""}) {
    INFO(fine);
    CHECK(analyse(fine).findings.empty());
  }
  for (const char* bad : {"PATH=/x:$PATH make", "PATH=/usr/bin python3", "export PATH=/x",
                          "unset PATH", "env -u PATH make", "env --unset=PATH make",
                          "env PATH=/usr/bin python3", "declare -x PATH=/bin"}) {
    INFO(bad);
    CHECK(kinds(analyse(bad)) == Kinds{FindingKind::path_override});
  }
}

TEST_CASE("analysis flags variables that steer sandshim", "[hooks][analysis]") {
  for (const char* bad :
       {"export SANDSHIM_CONFIG=/tmp/x", "env DOCKER_HOST=tcp://h:1 make",
        "XDG_CONFIG_HOME=/tmp python3 x", "LD_PRELOAD=./x.so ls", "HOME=/tmp/h node x",
        "unset SANDSHIM_TOOL_USE_ID", "env -u DOCKER_CONFIG make", "CONTAINER_HOST=x podman ps"}) {
    INFO(bad);
    REQUIRE(kinds(analyse(bad)) == Kinds{FindingKind::protected_variable});
  }
  CHECK(analyse("LD_LIBRARY_PATH=build/lib ./test").findings.empty());
  CHECK(is_protected_variable("SANDSHIM_AGENT"));
  CHECK_FALSE(is_protected_variable("PYTHONPATH"));
}

TEST_CASE("analysis reads the #! line of scripts it runs", "[hooks][analysis]") {
  CHECK(invocation(analyse("pytest -q"), "pytest").shebang == "/usr/bin/python3");
  CHECK(invocation(analyse("./tool.py"), "tool.py").shebang == "/usr/bin/python3");
  CHECK(invocation(analyse("./run.sh"), "run.sh").shebang.empty());
  CHECK(invocation(analyse("npx prettier ."), "npx").shebang.empty());
  CHECK(invocation(analyse("./clean"), "clean").shebang == "/usr/bin/env -i python3");
  CHECK(invocation(analyse("./routed"), "routed").shebang.empty());
  CHECK(invocation(analyse("git status"), "git").shebang.empty());
}

TEST_CASE("analysis recognises launchers that pick their own interpreter", "[hooks][analysis]") {
  CHECK(invocation(analyse("uv run pytest"), "uv").launcher == "uv run");
  CHECK(invocation(analyse("uv --quiet run x.py"), "uv").launcher == "uv run");
  CHECK(invocation(analyse("uv pip install x"), "uv").launcher.empty());
  CHECK(invocation(analyse("uv --directory d run x.py"), "uv").launcher == "uv run");
  CHECK(invocation(analyse("uv --directory d sync"), "uv").installer == "uv sync");
  CHECK(invocation(analyse("uv -p 3.12 pip install x"), "uv").installer == "uv pip install");
  CHECK(invocation(analyse("uv --color=never sync"), "uv").installer == "uv sync");
  CHECK(invocation(analyse("uv --directory sync lock"), "uv").installer.empty());
  CHECK(invocation(analyse("uvx ruff check"), "uvx").launcher == "uvx");
  CHECK(invocation(analyse("poetry run python x"), "poetry").launcher == "poetry run");
}
