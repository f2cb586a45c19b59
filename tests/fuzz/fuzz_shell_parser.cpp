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

DecisionInputs decision_inputs() {
  DecisionInputs inputs;
  inputs.shimmed = {"python", "python3", "node", "sh"};
  inputs.shim_dir = "/home/user/.local/share/sandshim/bin";
  inputs.sandshim = "/usr/local/bin/sandshim";
  inputs.shim_installed = [](const std::string&) { return true; };
  inputs.first_line_of = made_up_first_line;
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
  AnalysisOptions options{inputs.shimmed, inputs.shim_dir, inputs.sandshim, made_up_first_line};
  (void)analyse_command(command, options);
  for (const char* mode : {"path", "wrap", "deny"}) {
    DecisionInputs moded = inputs;
    moded.mode = mode;
    check_decision(command, moded);
  }
  return 0;
}
