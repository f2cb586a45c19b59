#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "cli/completion.hpp"
#include "cli/dispatch.hpp"
#include "cli/option_info.hpp"
#include "policy/policy.hpp"
#include "test_shell_support.hpp"

using namespace sandshim;
using namespace sandshim::cli;
using Catch::Matchers::Contains;
using sandshim::test::output_of;

namespace {

bool have(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/sandshim-docs-test.XXXXXX";
    int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::remove(path.c_str()); }
};

std::string words_of(const CommandDoc& doc) {
  return doc.path.empty() ? "" : " " + doc.path;
}

// For each command, what bash completes after `sandshim PATH -`: one line "PATH:opt opt...".
std::string bash_completions(const std::vector<CommandDoc>& docs) {
  TempFile script(completion_script("bash", docs));
  std::string driver = "source " + script.path + "\n";
  for (const auto& doc : docs) {
    driver += "COMP_WORDS=(sandshim" + words_of(doc) +
              " -); COMP_CWORD=$((${#COMP_WORDS[@]}-1));"
              " COMPREPLY=(); _sandshim; echo \"" +
              doc.path + ":${COMPREPLY[*]}\"\n";
  }
  TempFile driver_file(driver);
  return output_of("bash " + driver_file.path);
}

std::string line_for(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) == 0) {
      return line + " ";
    }
  }
  return "";
}

}  // namespace

TEST_CASE("the registry documents every command of `sandshim --help`", "[cli][docs]") {
  auto docs = command_docs();
  REQUIRE(docs.front().path.empty());
  for (const auto& name : docs.front().operands) {
    CAPTURE(name);
    bool documented = std::any_of(docs.begin(), docs.end(),
                                  [&](const CommandDoc& doc) { return doc.path == name; });
    CHECK(documented);
  }
  for (const auto& doc : docs) {
    CAPTURE(doc.path);
    CHECK(doc.options != nullptr);
    CHECK_FALSE(doc.summary.empty());
  }
}

TEST_CASE("--help of every command shows exactly the options the registry has", "[cli][docs]") {
  for (const auto& doc : command_docs()) {
    if (doc.path.empty()) {
      continue;
    }
    CAPTURE(doc.path);
    std::string help = output_of(std::string(SANDSHIM_BINARY) + " " + doc.path + " --help 2>&1");
    for (const auto& option : options_of(doc)) {
      CHECK_THAT(help, Contains("--" + option.long_name));
    }
  }
}

TEST_CASE("no command accepts an abbreviated or unknown option", "[cli][docs]") {
  // `--works rw` for --workspace would slip past every check that reads full option names.
  // Nothing may act if a command did accept one: no HOME to install into, dry runs only.
  const std::string binary =
      "env HOME=/nonexistent-sandshim-test SANDSHIM_DRY_RUN=1 "
      "XDG_CONFIG_HOME=/nonexistent-sandshim-test " +
      std::string(SANDSHIM_BINARY);
  for (const auto& doc : command_docs()) {
    for (const auto& option : options_of(doc)) {
      if (doc.path.empty() || option.long_name.size() < 5 || option.long_name == "help") {
        continue;
      }
      std::string abbreviated = "--" + option.long_name.substr(0, 3);
      CAPTURE(doc.path, abbreviated);
      std::string out = output_of(binary + " " + doc.path + " " + abbreviated +
                                  " x -- true 2>&1; echo \"exit=$?\"");
      CHECK_THAT(out, !Contains("exit=0"));
    }
    if (!doc.path.empty()) {
      std::string unknown =
          output_of(binary + " " + doc.path + " --no-such-option 2>&1; echo \"exit=$?\"");
      CHECK_THAT(unknown, !Contains("exit=0"));
    }
  }
}

TEST_CASE("bash completes every option of every command", "[cli][docs][completion]") {
  auto docs = command_docs();
  std::string completed = bash_completions(docs);
  for (const auto& doc : docs) {
    std::string line = line_for(completed, doc.path + ":");
    CAPTURE(doc.path, line);
    REQUIRE_FALSE(line.empty());
    for (const auto& option : options_of(doc)) {
      CHECK_THAT(line, Contains(" --" + option.long_name + " ") ||
                           Contains(":--" + option.long_name + " "));
    }
  }
}

TEST_CASE("bash completes subcommands and an option's listed values", "[cli][docs][completion]") {
  TempFile script(completion_script("bash", command_docs()));
  auto complete = [&](const std::string& words) {
    return output_of(
        "bash -c 'source " + script.path + "; COMP_WORDS=(" + words +
        "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _sandshim; echo \"${COMPREPLY[*]}\"'");
  };
  CHECK(complete("sandshim aud") == "audit\n");
  CHECK(complete("sandshim audit ve") == "verify\n");
  CHECK(complete("sandshim run --network \"\"") == "none allowlist bridge\n");
  CHECK(complete("sandshim install agent cl") == "claude\n");
  CHECK(complete("sandshim --db x.db audit list --li") == "--limit\n");
}

TEST_CASE("zsh and fish completions name every option of every command",
          "[cli][docs][completion]") {
  auto docs = command_docs();
  std::string zsh = completion_script("zsh", docs);
  std::string fish = completion_script("fish", docs);
  for (const auto& doc : docs) {
    CAPTURE(doc.path);
    size_t at = zsh.find("        ('" + doc.path + "')\n            opts=(");
    REQUIRE(at != std::string::npos);
    std::string zsh_opts = zsh.substr(at, zsh.find('\n', zsh.find("opts=(", at)) - at);
    for (const auto& option : options_of(doc)) {
      CHECK_THAT(zsh_opts, Contains("'--" + option.long_name + ":"));
      CHECK_THAT(
          fish, Contains("-n '__sandshim_at \\'" + doc.path + "\\'' -l " + option.long_name + " "));
    }
  }
  if (have("zsh")) {
    TempFile file(zsh);
    CHECK(output_of("zsh -n " + file.path + " 2>&1").empty());
  }
  if (have("fish")) {
    TempFile file(fish);
    CHECK(output_of("fish --no-execute " + file.path + " 2>&1").empty());
  }
}

TEST_CASE("an unknown shell is refused with the ones there are", "[cli][docs][completion]") {
  std::string out = output_of(std::string(SANDSHIM_BINARY) + " --generate-completion tcsh 2>&1");
  CHECK_THAT(out, Contains("use bash, zsh or fish"));
}

TEST_CASE("the man page documents every command and option, and groff reads it cleanly",
          "[cli][docs][man]") {
  auto docs = command_docs();
  std::string page = man_page(docs, "0.0.0");
  for (const auto& doc : docs) {
    CAPTURE(doc.path);
    if (!doc.path.empty()) {
      std::string roff_path = std::regex_replace(doc.path, std::regex("-"), "\\-");
      CHECK_THAT(page, Contains(".SS \"sandshim " + roff_path + "\""));
    }
    for (const auto& option : options_of(doc)) {
      std::string roff_name = std::regex_replace(option.long_name, std::regex("-"), "\\-");
      CHECK_THAT(page, Contains("\\fB\\-\\-" + roff_name + "\\fR"));
    }
  }
  if (have("groff")) {
    TempFile file(page);
    CHECK(output_of("groff -man -ww -z -Tutf8 " + file.path + " 2>&1").empty());
  }
  if (have("man")) {
    TempFile file(page);
    // The page itself may say "warning" (doctor's help does): only man's own stderr must be empty.
    std::string rendered = output_of("MANWIDTH=80 man --warnings -l " + file.path + " 2>/dev/null");
    CHECK_THAT(rendered, Contains("sandshim audit list"));
    CHECK(output_of("MANWIDTH=80 man --warnings -l " + file.path + " 2>&1 >/dev/null").empty());
  }
}

// The installed /etc/sandshim/config: every key commented out at its built-in default.
TEST_CASE("the default config changes nothing, and uncommented it still changes nothing",
          "[cli][docs][config]") {
  std::string text = config_template();
  shim::Policy defaults;
  defaults.images = shim::default_images();
  std::string baseline = defaults.digest();

  TempFile commented(text);
  auto settings = shim::read_config_file(commented.path);
  CHECK(settings.empty());

  std::string uncommented;
  std::istringstream lines(text);
  std::regex setting(R"(# (\[[a-z]+\]|[a-z_0-9]+ =.*))");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    uncommented += (std::regex_match(line, match, setting) ? match[1].str() : line) + "\n";
  }
  CAPTURE(uncommented);
  TempFile active(uncommented);
  shim::Policy explicit_defaults;
  explicit_defaults.images = shim::default_images();
  auto active_settings = shim::read_config_file(active.path);
  CHECK(active_settings.size() >= shim::policy_keys().size());
  shim::apply_settings(explicit_defaults, active_settings, shim::Trust::full);
  CHECK(explicit_defaults.digest() == baseline);
}

// docs/configuration.md holds the key reference as generated, from its marker line to the end.
TEST_CASE("docs/configuration.md's key reference is the generated one", "[cli][docs][config]") {
  std::string path = std::string(SANDSHIM_TEST_DATA_DIR) + "/../../docs/configuration.md";
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(text.empty());
  size_t marker = text.find(k_config_reference_marker);
  INFO(
      "docs/configuration.md is out of date; regenerate it with\n"
      "  sed -i '/^<!-- Generated by sandshim --generate-config-doc/,$d' docs/configuration.md &&\n"
      "  build/sandshim --generate-config-doc >> docs/configuration.md");
  REQUIRE(marker != std::string::npos);
  CHECK(text.substr(marker) == config_reference());
  for (const auto& key : shim::policy_keys()) {
    CAPTURE(key.name);
    CHECK_THAT(text, Contains("| `" + key.name + "` |"));
  }
}
