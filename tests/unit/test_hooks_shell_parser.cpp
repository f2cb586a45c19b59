#include <catch2/catch.hpp>

#include "hooks/shell_parser.hpp"

using sandshim::hooks::assignment_name;
using sandshim::hooks::parse_shell;
using sandshim::hooks::ShellParse;
using sandshim::hooks::SimpleCommand;

namespace {

// The command names in order, "<context>name" for nested ones.
std::vector<std::string> names(const ShellParse& parse) {
  std::vector<std::string> result;
  for (const SimpleCommand& command : parse.commands) {
    if (!command.words.empty()) {
      result.push_back(command.context + command.words.front().value);
    }
  }
  return result;
}

std::vector<std::string> names_of(const std::string& script) {
  ShellParse parse = parse_shell(script);
  INFO(script << " -> " << parse.error.value_or("ok"));
  REQUIRE_FALSE(parse.error);
  return names(parse);
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("parser splits lists, pipelines and background jobs", "[hooks][parser]") {
  CHECK(names_of("a; b && c || d | e & f") == Names{"a", "b", "c", "d", "e", "f"});
  CHECK(names_of("a |& b\nc") == Names{"a", "b", "c"});
  CHECK(names_of("a &&\n  b") == Names{"a", "b"});
  CHECK(names_of("! a | b") == Names{"a", "b"});
  CHECK(names_of("time -p a") == Names{"a"});
}

TEST_CASE("parser removes quotes and escapes like bash", "[hooks][parser]") {
  ShellParse parse = parse_shell(R"(p'yth'"on3" \x a\ b $'\x70y' "a\"b" 'c\d')");
  REQUIRE_FALSE(parse.error);
  const auto& words = parse.commands.at(0).words;
  REQUIRE(words.size() == 6);
  CHECK(words[0].value == "python3");
  CHECK(words[0].quoted);
  CHECK(words[1].value == "x");
  CHECK(words[2].value == "a b");
  CHECK(words[3].value == "py");
  CHECK(words[4].value == "a\"b");
  CHECK(words[5].value == "c\\d");
}

TEST_CASE("parser decodes ANSI-C quoting exactly", "[hooks][parser]") {
  ShellParse parse = parse_shell(R"($'\160\x79th\u006fn' $'a\tb' $'\'')");
  REQUIRE_FALSE(parse.error);
  CHECK(parse.commands[0].words[0].value == "python");
  CHECK(parse.commands[0].words[1].value == "a\tb");
  CHECK(parse.commands[0].words[2].value == "'");
}

TEST_CASE("parser marks words whose text is only known at run time", "[hooks][parser]") {
  ShellParse parse =
      parse_shell("$PY \"$(which python)\" ${X:-y} *.py {a,b} {} [ `id` $((1+2)) ~/x");
  REQUIRE_FALSE(parse.error);
  const auto& words = parse.commands.at(0).words;
  REQUIRE(words.size() == 10);
  CHECK(words[0].parameters == std::vector<std::string>{"PY"});
  CHECK(words[1].substitutes_commands);
  CHECK(words[2].parameters == std::vector<std::string>{"X"});
  CHECK(words[3].globs);
  CHECK(words[4].globs);
  CHECK_FALSE(words[5].is_dynamic());  // {} stays {}
  CHECK_FALSE(words[6].is_dynamic());  // [ is the test builtin
  CHECK(words[7].substitutes_commands);
  CHECK(words[8].arithmetic);
  CHECK_FALSE(words[9].is_dynamic());
  CHECK(words[9].value == "~/x");
}

TEST_CASE("parser finds commands inside substitutions", "[hooks][parser]") {
  CHECK(names_of("echo $(python3 -c 1) `node x` <(sh y) >(perl z)") ==
        Names{"echo", "$(…)python3", "`…`node", "<(…)sh", ">(…)perl"});
  CHECK(names_of("a \"$(b \"$(c)\")\"") == Names{"a", "$(…)b", "$(…)c"});
  CHECK(names_of("x=${y:-$(z)}") == Names{"$(…)z"});
  CHECK(names_of("echo $(( $(n) + 1 ))") == Names{"echo", "$(…)n"});
  CHECK(names_of("echo `a \\`b\\``") == Names{"echo", "`…`a", "`…`b"});
}

TEST_CASE("parser handles groups, subshells and compound commands", "[hooks][parser]") {
  CHECK(names_of("(a; b) && { c; d; }") == Names{"a", "b", "c", "d"});
  CHECK(names_of("if a; then b; elif c; then d; else e; fi") == Names{"a", "b", "c", "d", "e"});
  CHECK(names_of("while a; do b; done; until c; do d; done") == Names{"a", "b", "c", "d"});
  CHECK(names_of("for f in *.py; do python3 \"$f\"; done") == Names{"python3"});
  CHECK(names_of("for ((i=0;i<3;i++)); do a; done") == Names{"a"});
  CHECK(names_of("case $x in a|b) c;; (d) e ;& *) f;;& esac") == Names{"c", "e", "f"});
  CHECK(names_of("case $x in\n  *.py) python3 $x\nesac") == Names{"python3"});
  CHECK(names_of("f() { a; }; function g { b; }; function h() ( c )") == Names{"a", "b", "c"});
  CHECK(names_of("[[ -f x && $(a) == b ]] && (( i > $(c) ))") == Names{"$(…)a", "$(…)c"});
  CHECK(names_of("{ a; } > out 2>&1 | b") == Names{"a", "b"});
  CHECK(names_of("coproc a") == Names{"a"});
}

TEST_CASE("parser separates assignments, redirections and words", "[hooks][parser]") {
  ShellParse parse = parse_shell("A=1 B+=2 C[0]=3 cmd D=4 2>/dev/null <in >>out &>all");
  REQUIRE_FALSE(parse.error);
  const SimpleCommand& command = parse.commands.at(0);
  REQUIRE(command.assignments.size() == 3);
  CHECK(command.words.size() == 2);  // after the name, D=4 is an argument
  REQUIRE(command.redirections.size() == 4);
  CHECK(command.redirections[0].fd == 2);
  CHECK(command.redirections[0].op == ">");
  CHECK(command.redirections[3].op == "&>");

  ShellParse array = parse_shell("arr=(a \"$(b)\" c) cmd");
  REQUIRE_FALSE(array.error);
  CHECK(names(array) == Names{"cmd", "$(…)b"});  // a command comes before what its words run
}

TEST_CASE("parser reads here-documents and the commands their expansions run", "[hooks][parser]") {
  ShellParse parse = parse_shell("cat <<EOF; cat <<-'END'\nline $(a)\nEOF\n\tkeep $(b)\n\tEND\nc");
  REQUIRE_FALSE(parse.error);
  CHECK(names(parse) == Names{"cat", "cat", "$(…)a", "c"});
  CHECK(parse.commands[0].redirections[0].heredoc_body == "line $(a)\n");
  CHECK(parse.commands[0].redirections[0].heredoc_expands);
  CHECK(parse.commands[1].redirections[0].heredoc_body == "keep $(b)\n");
  CHECK_FALSE(parse.commands[1].redirections[0].heredoc_expands);
}

TEST_CASE("parser accepts a here-document that runs to the end of input", "[hooks][parser]") {
  ShellParse parse = parse_shell("python3 <<EOF\nprint(1)\n");
  REQUIRE_FALSE(parse.error);
  CHECK(parse.commands[0].redirections[0].heredoc_body == "print(1)\n");
}

TEST_CASE("parser keeps comments and line continuations out of commands", "[hooks][parser]") {
  CHECK(names_of("a # b; c\nd") == Names{"a", "d"});
  CHECK(names_of("a \\\n  b; c#d") == Names{"a", "c#d"});
  CHECK(names_of("echo 'a # b' \"# c\"") == Names{"echo"});
}

TEST_CASE("parser refuses what bash would not run", "[hooks][parser]") {
  for (const char* bad :
       {"echo 'unterminated", "echo \"x", "echo $(a", "(a", "a )", "{ a;", "echo `a",
        "case x in a) b", "a && (", "cmd a=(x y)", "echo ${x", "[[ a", "(( 1 + 2 )", "a | ;;"}) {
    INFO(bad);
    CHECK(parse_shell(bad).error);
  }
}

TEST_CASE("parser refuses nesting deeper than any agent writes", "[hooks][parser]") {
  std::string deep;
  for (int i = 0; i < 100; ++i) {
    deep += "$(";
  }
  deep += "a";
  for (int i = 0; i < 100; ++i) {
    deep += ")";
  }
  CHECK(parse_shell(deep).error);
  std::string subshells;
  for (int i = 0; i < 10000; ++i) {
    subshells += "( ";
  }
  CHECK(parse_shell(subshells + "a" + std::string(10000, ')')).error);
  std::string many_ifs;
  for (int i = 0; i < 100000; ++i) {
    many_ifs += "if ";
  }
  CHECK(parse_shell(many_ifs + "a").error);  // each `if` opens a construct, as in bash
}

TEST_CASE("assignment_name follows bash's rule", "[hooks][parser]") {
  CHECK(assignment_name("PATH=/x") == "PATH");
  CHECK(assignment_name("PATH+=:/x") == "PATH");
  CHECK(assignment_name("a[1]=x") == "a");
  CHECK_FALSE(assignment_name("1A=x"));
  CHECK_FALSE(assignment_name("'A'=x"));
  CHECK_FALSE(assignment_name("A"));
  CHECK_FALSE(assignment_name("=x"));
}
