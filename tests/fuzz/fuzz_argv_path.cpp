// Caller-controlled argv, paths and environment on their way to the engine and into the rewritten
// hook commands: quoting reads back as the same words, the routing prefix strips back to the
// agent's command, the engine arguments keep every hardening flag and end with the caller's
// argv verbatim, and a path the engine could misread is refused.

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "fuzz_support.hpp"
#include "hooks/rewrite.hpp"
#include "hooks/shell_parser.hpp"
#include "policy/environment.hpp"
#include "policy/workspace.hpp"
#include "run/hardening.hpp"

using namespace sandshim;

namespace {

bool has_nul(const std::string& text) {
  return text.find('\0') != std::string::npos;
}

std::vector<std::string> consume_words(FuzzedDataProvider& input) {
  std::vector<std::string> words(input.ConsumeIntegralInRange<size_t>(0, 6));
  for (auto& word : words) {
    word = input.ConsumeRandomLengthString(64);
  }
  return words;
}

// Bash reads shell_join's output back as exactly these words (bash strings hold no NUL).
void check_quoting(const std::vector<std::string>& words) {
  if (words.empty() || std::any_of(words.begin(), words.end(), has_nul)) {
    return;
  }
  auto parse = hooks::parse_shell(shell_join(words));
  fuzz::require(!parse.error && parse.commands.size() == 1, "shell_join does not parse back");
  const auto& parsed = parse.commands[0].words;
  fuzz::require(parsed.size() == words.size(), "shell_join changes the number of words");
  for (size_t i = 0; i < words.size(); ++i) {
    fuzz::require(parsed[i].value == words[i] && !parsed[i].is_dynamic(),
                  "shell_join changes a word");
  }
  (void)quoted(words[0]);
  (void)split_words(words[0]);
  (void)glob_match(words[0], words.back());
}

// The hook's rewrites keep the agent's command recoverable byte for byte.
void check_routing(const std::string& command, const std::string& shim_dir,
                   const hooks::RunLink& link) {
  std::string routed = hooks::route_through_shims(command, shim_dir, link);
  fuzz::require(hooks::strip_routing(routed, shim_dir) == command,
                "strip_routing loses the command");
  fuzz::require(hooks::strip_any_routing(routed) == command, "strip_any_routing loses the command");
  if (has_nul(command) || has_nul(link.agent)) {
    return;
  }
  auto parse = hooks::parse_shell(hooks::wrap_in_sandbox(
      command, "/usr/bin/sandshim", "sandshim/wrap:bookworm", link, hooks::ShellRole::whole_shell));
  fuzz::require(!parse.error && !parse.commands.empty(), "wrap_in_sandbox does not parse");
  fuzz::require(parse.commands[0].words.back().value == command,
                "wrap_in_sandbox changes the command");
}

bool contains(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

// Whatever the caller's argv, cwd and environment, the hardening stays and argv comes last.
void check_engine_arguments(FuzzedDataProvider& input, const std::vector<std::string>& argv) {
  shim::Policy policy;
  shim::RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.invoked_as = "python";
  spec.image = "sandshim/python:bookworm";
  spec.user = "1000:1000";
  spec.command = argv;
  spec.cwd = "/" + input.ConsumeRandomLengthString(64);
  spec.workspace = input.ConsumeBool() ? spec.cwd : spec.cwd.parent_path();
  spec.env = shim::sandbox_environment(consume_words(input), policy);
  std::vector<std::string> args;
  try {
    args = shim::build_run_arguments(policy, spec);
  } catch (const Fatal&) {
    return;  // a path the engine's CSV could misread
  }
  fuzz::require(contains(args, "--read-only") && contains(args, "--cap-drop=ALL") &&
                    contains(args, "--network=none"),
                "a hardening flag is missing");
  fuzz::require(
      args.size() >= argv.size() + 1 &&
          std::equal(argv.begin(), argv.end(), args.end() - static_cast<ptrdiff_t>(argv.size())) &&
          args[args.size() - argv.size() - 1] == spec.image,
      "the image and argv do not come last");
  (void)shim::arguments_outside_workspace(argv, spec.cwd, spec.workspace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  FuzzedDataProvider input(data, size);
  auto words = consume_words(input);
  check_quoting(words);
  hooks::RunLink link{input.ConsumeRandomLengthString(32), input.ConsumeRandomLengthString(32),
                      input.ConsumeRandomLengthString(32)};
  std::string shim_dir = "/" + input.ConsumeRandomLengthString(64);
  std::string command = input.ConsumeRandomLengthString(256);
  check_routing(command, shim_dir, link);
  check_engine_arguments(input, words);
  return 0;
}
