// The shell corpus: fragments of real scripts (autoconf configure, Debian's shell wrappers in
// /usr/bin, and the forms gradlew, mvnw, nvm.sh and rustup's env use) with what the analysis
// must find in each, checked against bash itself so the table never claims what bash rejects.

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "common/process.hpp"
#include "hooks/decide.hpp"
#include "hooks/shell_analysis.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;

namespace {

// One `=== id -- source` block of tests/data/hooks/shell_corpus.txt.
struct CorpusCase {
  std::string id;
  std::string source;
  std::string script;
  std::map<std::string, std::string> expect;  // "programs", "error", "bash", "path", "deny", "wrap"
};

void add_expectation(CorpusCase& current, const std::string& line) {
  size_t colon = line.find(':');
  REQUIRE(colon != std::string::npos);
  std::string key = line.substr(4, colon - 4);
  std::string value = colon + 1 < line.size() ? line.substr(colon + 2) : "";
  current.expect[key] = value;
}

std::vector<CorpusCase> read_corpus() {
  std::ifstream in(sandshim::testing::data_dir() / "hooks" / "shell_corpus.txt");
  REQUIRE(in);
  std::vector<CorpusCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("=== ")) {
      size_t dash = line.find(" -- ");
      cases.push_back({line.substr(4, dash - 4), line.substr(dash + 4), "", {}});
    } else if (cases.empty()) {
      continue;  // the header
    } else if (line.starts_with(">>> ")) {
      add_expectation(cases.back(), line);
    } else if (!cases.back().expect.empty()) {
      REQUIRE(line.empty());  // expectations come after the whole script; then blank lines
    } else {
      cases.back().script += (cases.back().script.empty() ? "" : "\n") + line;
    }
  }
  return cases;
}

bool bash_accepts(const std::string& script) {
  auto run = sandshim::run_captured({"/bin/bash", "-n", "-c", script}, {"LC_ALL=C"},
                                    std::chrono::seconds(20));
  return run.status.code == 0 && run.err.empty();
}

DecisionInputs corpus_inputs(const std::string& mode) {
  DecisionInputs in = sandshim::testing::decision_inputs(mode);
  in.cwd = "/home/u/project";
  // A few of each kind protected_paths() names (its own tests cover the list).
  std::vector<ProtectedPlace> places;
  for (const char* file : {"/home/u/.bashrc", "/home/u/.bash_profile", "/home/u/.bash_login",
                           "/home/u/.profile", "/home/u/.zshrc", "/home/u/.zshenv",
                           "/home/u/.zprofile", "/home/u/.claude/settings.json"}) {
    places.push_back({file, false, "a protected file"});
  }
  for (const char* tree : {"/home/u/.config/fish", "/etc/profile.d", "/home/u/.config/sandshim",
                           "/home/u/.codex", "/home/u/.gemini"}) {
    places.push_back({tree, true, "a protected directory"});
  }
  in.protected_paths = ProtectedPaths(std::move(places));
  return in;
}

std::string programs_of(const CommandAnalysis& analysis) {
  std::string programs;
  for (const Invocation& invocation : analysis.invocations) {
    programs += (programs.empty() ? "" : " ") + invocation.command;
  }
  return programs;
}

std::optional<std::string> parse_error_of(const CommandAnalysis& analysis) {
  for (const Finding& finding : analysis.findings) {
    if (finding.kind == FindingKind::parse_error && !finding.enclosing_shell) {
      return finding.detail;
    }
  }
  return std::nullopt;
}

std::string verdict_of(const Decision& decision) {
  switch (decision.verdict) {
    case Verdict::allow:
      return "allow";
    case Verdict::rewrite:
      return "rewrite " + decision.rule;
    case Verdict::deny:
      return "deny " + decision.rule;
  }
  return "";
}

void check_case(const CorpusCase& c) {
  INFO(c.id << " (" << c.source << ")\n" << c.script);
  bool rejects = c.expect.contains("bash") && c.expect.at("bash") == "rejects";
  CHECK(bash_accepts(c.script) == !rejects);
  CommandAnalysis analysis = analyse_command(c.script, analysis_options(corpus_inputs("path")));
  std::optional<std::string> error = parse_error_of(analysis);
  if (c.expect.contains("error")) {
    REQUIRE(error);
    CHECK_THAT(*error, Catch::Contains(c.expect.at("error")));
    CHECK_THAT(*error, !Catch::Contains("quot") || Catch::Contains("quote that never closes"));
  } else {
    CHECK(error.value_or("parses") == "parses");
  }
  if (c.expect.contains("programs")) {
    CHECK(programs_of(analysis) == c.expect.at("programs"));
  }
  for (const char* mode : {"path", "deny", "wrap"}) {
    if (c.expect.contains(mode)) {
      Decision decision = decide(c.script, corpus_inputs(mode));
      INFO(mode << ": " << decision.reason);
      CHECK(verdict_of(decision) == c.expect.at(mode));
    }
  }
}

}  // namespace

TEST_CASE("shell corpus: real scripts parse, with the programs and decisions expected",
          "[hooks][corpus]") {
  std::vector<CorpusCase> cases = read_corpus();
  size_t from_real_scripts = 0;
  for (const CorpusCase& c : cases) {
    from_real_scripts += c.id.starts_with("real-") ? 1 : 0;
    check_case(c);
  }
  CHECK(cases.size() >= 200);
  CHECK(from_real_scripts >= 100);
}

TEST_CASE("shell corpus: every refusal of unreadable syntax names the construct",
          "[hooks][corpus]") {
  Decision decision = decide("echo ok; if true; then echo x", corpus_inputs("path"));
  CHECK(decision.verdict == Verdict::deny);
  CHECK(decision.reason ==
        "sandshim cannot read this command: the `if` at line 1, column 10 has no `fi` (found end "
        "of input at line 1, column 30). It was not run; write that part another way. Rule "
        "`unparseable`; no configuration lifts it (nothing runs unread).");
}
