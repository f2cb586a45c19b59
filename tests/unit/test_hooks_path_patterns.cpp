#include <catch2/catch.hpp>

#include <algorithm>

#include "hooks/path_patterns.hpp"
#include "hooks/protected_paths.hpp"
#include "hooks/shell_parser.hpp"
#include "hooks/word_values.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;
namespace fs = std::filesystem;

namespace {

const std::string k_name(1, k_any_name);
const std::string k_text(1, k_any_text);
const std::string k_first(1, k_first_char);

// The patterns the last word (or redirection) of the last command of `script` may expand to,
// shown; the environment's value of a variable comes last.
std::vector<std::string> expanded(const std::string& script, const std::string& unknown = "") {
  ShellParse parse = parse_shell(script);
  REQUIRE_FALSE(parse.error);
  VariableValues values(ValueContext{"/home/u", "/home/u/project", [](const std::string& name) {
                                       return name == "XDG_CONFIG_HOME"
                                                  ? std::optional<std::string>("/home/u/.cfg")
                                                  : std::nullopt;
                                     }});
  values.learn(parse);
  auto top = std::find_if(parse.commands.rbegin(), parse.commands.rend(),
                          [](const SimpleCommand& command) { return command.context.empty(); });
  REQUIRE(top != parse.commands.rend());
  const SimpleCommand& last = *top;
  Expansion expansion = values.expand(last.redirections.empty() ? last.words.back()
                                                                : last.redirections.back().target);
  CHECK(expansion.unknown == unknown);
  std::vector<std::string> shown;
  for (const std::string& pattern : expansion.patterns) {
    shown.push_back(shown_pattern(pattern));
  }
  return shown;
}

}  // namespace

TEST_CASE("patterns overlap when one path can match both", "[hooks][patterns]") {
  CHECK(patterns_overlap("/home/u/.bashrc", "/home/u/.bashrc"));
  CHECK_FALSE(patterns_overlap("/home/u/.bashrc", "/home/u/.profile"));
  CHECK(patterns_overlap(k_text, "/home/u/.bashrc"));
  CHECK(patterns_overlap("/home/u/" + k_text, "/home/u/.codex/" + k_text));
  CHECK(patterns_overlap("/home/u/.bash" + k_name, "/home/u/.bashrc"));
  CHECK_FALSE(patterns_overlap("/home/u/" + k_name, "/home/u/.codex/" + k_text));  // no `/`
  // A glob's first character never matches a leading dot, as bash's `*` does not.
  CHECK_FALSE(patterns_overlap("/w/" + k_first + k_name, "/w/.sandshim.conf"));
  CHECK(patterns_overlap("/w/" + k_first + k_name, "/w/setup.py"));
  CHECK(patterns_overlap(k_text + "/x.bak", "/home/u/.codex/" + k_text));
  CHECK_FALSE(patterns_overlap("/tmp/tmp." + k_name, k_text + "/.sandshim.conf"));
}

TEST_CASE("globs and braces become patterns", "[hooks][patterns]") {
  CHECK(glob_patterns("~/.{bashrc,profile}", true) ==
        std::vector<std::string>{"~/.bashrc", "~/.profile"});
  CHECK(glob_patterns("a*.py", false) == std::vector<std::string>{"a*.py"});
  CHECK(glob_patterns("src/*.py", true) ==
        std::vector<std::string>{"src/" + k_first + k_name + ".py"});
  CHECK(absolute_pattern("../x", "/home/u/p") == "/home/u/x");
  CHECK(absolute_pattern(k_name + "/../.bashrc", "/home/u") == "/" + k_text + "/.bashrc");
  CHECK(absolute_pattern("./a//b", "/w") == "/w/a/b");
}

TEST_CASE("a word's values come from the script's assignments, loops and environment",
          "[hooks][patterns]") {
  CHECK(expanded("f=~/.claude/settings.json; echo > \"$f\"") ==
        std::vector<std::string>{"/home/u/.claude/settings.json", ""});
  CHECK(expanded("d=$HOME/.claude; f=$d/s.json; echo > $f") ==
        std::vector<std::string>{"/home/u/.claude/s.json", "/s.json", ""});
  CHECK(expanded("echo > \"${XDG_CONFIG_HOME:-$HOME/.config}/x\"") ==
        std::vector<std::string>{"/home/u/.cfg/x", "/home/u/.config/x"});
  CHECK(expanded("for f in a ~/.profile; do echo > \"$f\"; done") ==
        std::vector<std::string>{"a", "/home/u/.profile", ""});
  CHECK(expanded("t=$(mktemp); echo > \"$t\"") == std::vector<std::string>{"/tmp/tmp.*", ""});
  CHECK(expanded("read f; echo > \"$f\"", "$f (set by `read f`)") == std::vector<std::string>{"…"});
  CHECK(expanded("echo > \"$(cat x)/y\"", "$(cat x)") == std::vector<std::string>{"…/y"});
  CHECK(expanded("echo > \"$1\"", "$1") == std::vector<std::string>{"…"});
  CHECK(expanded("echo > '$HOME'") == std::vector<std::string>{"$HOME"});  // quoted: literal
}

TEST_CASE("a pattern is protected when a file it may name is", "[hooks][patterns][protected]") {
  ProtectedPaths paths(
      std::vector<ProtectedPlace>{{"/home/u/.bashrc", false, "a shell start-up file"},
                                  {"/home/u/.codex", true, "Codex's settings"}});
  CHECK(protected_pattern_reason("/home/u/.bash" + k_name, paths));
  CHECK(protected_pattern_reason(k_text, paths));
  CHECK(protected_pattern_reason("/home/u/" + k_name + "/config.toml", paths));
  CHECK_FALSE(protected_pattern_reason("/home/u/project/" + k_first + k_name + ".py", paths));
  CHECK(protected_pattern_reason("/home/u/project/" + k_text + ".conf", paths));  // .sandshim.conf
  CHECK_FALSE(protected_pattern_reason("/tmp/tmp." + k_name, paths));
}
