#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/command_doc.hpp"
#include "hooks/hook_run.hpp"

namespace sandshim::hooks {

// `sandshim hook [--agent AGENT] [--event NAME]` (agents: hooks/agents/registry.cpp): reads one
// agent hook event on stdin, answers on stdout in that agent's format, records the decision. Never
// throws: every failure is answered the way the agent treats as "blocked". It always runs in
// the caller's own process; `adapt` may redirect its audit writes (to a broker).
int hook_main(const std::vector<std::string>& args,
              const std::function<void(HookEnvironment&)>& adapt = {});
// Its documentation, for --help, the completions and the man page.
CommandDoc hook_doc();

}  // namespace sandshim::hooks
