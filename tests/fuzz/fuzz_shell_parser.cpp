// The hooks' bash reader, their largest attack surface: any command line parses or fails with a
// reason (never throws, never recurses without bound), and the analysis that decides on it runs
// to completion. The file system is never read: scripts' first lines are made up.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "hooks/decide.hpp"
#include "hooks/shell_analysis.hpp"
#include "hooks/shell_parser.hpp"

using namespace sandshim;
using namespace sandshim::hooks;

namespace {

std::optional<std::string> made_up_first_line(const std::string& command) {
  if (command.find("script") != std::string::npos) {
    return "#!/usr/bin/env python3";
  }
  return std::nullopt;
}

// A made-up host: `tool…` names a copy of perl, `*.sh` files hold a script that calls perl.
std::optional<std::filesystem::path> made_up_locate(const std::string& command) {
  if (command.find("tool") != std::string::npos || command.ends_with(".sh")) {
    return std::filesystem::path("/work") / std::filesystem::path(command).filename();
  }
  return std::nullopt;
}

std::optional<std::string> made_up_program(const std::filesystem::path& file) {
  return file.filename().string().starts_with("tool") ? std::optional<std::string>("perl")
                                                      : std::nullopt;
}

std::optional<std::string> made_up_script(const std::filesystem::path& file) {
  return file.extension() == ".sh" ? std::optional<std::string>("#!/bin/sh\n/usr/bin/perl -e 1\n")
                                   : std::nullopt;
}

DecisionInputs decision_inputs() {
  DecisionInputs inputs;
  inputs.shimmed = {"python", "python3", "node", "sh"};
  inputs.shim_dir = "/home/user/.local/share/sandshim/bin";
  inputs.sandshim = "/usr/local/bin/sandshim";
  inputs.shim_installed = [](const std::string&) { return true; };
  inputs.first_line_of = made_up_first_line;
  inputs.locate = made_up_locate;
  inputs.known_program_of = made_up_program;
  inputs.read_script = made_up_script;
  inputs.cwd = "/work";
  inputs.home = "/home/user";
  inputs.protected_paths = ProtectedPaths(
      std::vector<ProtectedPlace>{{"/home/user/.config/sandshim", true, "sandshim's config"},
                                  {inputs.shim_dir, true, "the shim directory"}});
  inputs.link = {"claude-code", "s1", "t1"};
  return inputs;
}

// A rewrite is the agent's own command behind the routing prefix, so it parses as well.
void check_decision(std::string_view command, const DecisionInputs& inputs) {
  Decision decision = decide(command, inputs);
  if (decision.verdict == Verdict::rewrite && inputs.mode == "path") {
    fuzz::require(strip_routing(decision.rewritten_command, inputs.shim_dir) == command,
                  "a path rewrite does not strip back to the command");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string_view command(reinterpret_cast<const char*>(data), size);
  auto parse = parse_shell(command);
  for (const auto& simple : parse.commands) {
    for (const auto& word : simple.assignments) {
      fuzz::require(assignment_name(word.source).has_value(), "an assignment without a name");
    }
  }
  static const DecisionInputs inputs = decision_inputs();
  AnalysisOptions options;
  options.shimmed = inputs.shimmed;
  options.shim_dir = inputs.shim_dir;
  options.sandshim = inputs.sandshim;
  options.first_line_of = made_up_first_line;
  options.locate = made_up_locate;
  options.known_program_of = made_up_program;
  options.read_script = made_up_script;
  options.cwd = inputs.cwd;
  options.home = inputs.home;
  options.protected_paths = inputs.protected_paths;
  (void)analyse_command(command, options);
  for (const char* mode : {"path", "wrap", "deny"}) {
    DecisionInputs moded = inputs;
    moded.mode = mode;
    check_decision(command, moded);
  }
  return 0;
}
