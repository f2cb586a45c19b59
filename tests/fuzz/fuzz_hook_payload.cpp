// The hook protocol of every agent of the registry (and detection when
// the hook was installed without --agent): whatever an agent sends, run_hook answers with
// nothing or one line holding one JSON object, never throws, and refuses bad input as invalid
// rather than as an internal error. Policy, audit and file system are in memory.
//
// Input: one byte choosing the agent, hook.mode and rewrite approval, then the payload.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "hooks/hook_run.hpp"

using namespace sandshim;
using namespace sandshim::hooks;

namespace {

constexpr const char* k_modes[] = {"path", "wrap", "deny"};

shim::Policy fake_policy(uint8_t selector) {
  shim::Policy policy;
  policy.images = {{"python", "i"}, {"python3", "i"}, {"node", "i"}, {"sh", "i"}};
  policy.shim_dir = "/home/user/.local/share/sandshim/bin";
  policy.hook_mode = shim::hook_mode_from(k_modes[(selector / 8) % 3]).value();
  return policy;
}

HookEnvironment fake_environment(uint8_t selector) {
  HookEnvironment env;
  env.load_policy = [selector](const std::filesystem::path&) { return fake_policy(selector); };
  env.record_decision = [](const shim::Policy&, const audit::DecisionRecord& record) {
    fuzz::require(record.rule != "internal-error",
                  "an exception escaped the hook: " + record.reason);
    return std::string("d1");
  };
  env.complete_decision = [](const shim::Policy&, const std::string&,
                             const audit::DecisionCompletion&) { return true; };
  env.close_session = [](const shim::Policy&, const std::string&, const std::string&) {
    return size_t{0};
  };
  env.sandshim = "/usr/local/bin/sandshim";
  env.agent_path = "/usr/local/bin:/usr/bin:/bin";
  env.first_line_of = [](const std::string& command, const std::filesystem::path&) {
    // Some files are scripts, so the shebang paths of the analysis run too.
    return command.find("script") != std::string::npos
               ? std::optional<std::string>("#!/usr/bin/python3")
               : std::nullopt;
  };
  env.exists = [](const std::filesystem::path&) { return true; };
  env.now_ms = [] { return int64_t{1000}; };
  env.claude_session_env_dir = "/nonexistent/session-env";
  env.append_text = [](const std::filesystem::path&, const std::string&) { return true; };
  env.session_scripts = [selector](const std::filesystem::path&) {
    return selector % 2 == 0 ? std::vector<std::string>{session_environment_script(
                                   "/home/user/.local/share/sandshim/bin", "claude-code", "s")}
                             : std::vector<std::string>{};
  };
  return env;
}

HookOptions options_for(uint8_t selector) {
  HookOptions options;
  const std::vector<Agent>& agents = all_agents();
  size_t which = selector % 8U;
  if (which < agents.size()) {
    options.agent = agents[which];
  }
  return options;
}

// Stdout is the protocol: empty, or one line with one JSON object.
void check_reply(const HookReply& reply) {
  if (reply.out.empty()) {
    return;
  }
  fuzz::require(reply.out.back() == '\n' && reply.out.find('\n') == reply.out.size() - 1,
                "the hook's stdout is not one line");
  auto answer = nlohmann::json::parse(reply.out, nullptr, false);
  fuzz::require(!answer.is_discarded() && answer.is_object(),
                "the hook's stdout is not a JSON object");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  if (size == 0) {
    return 0;
  }
  uint8_t selector = data[0];
  std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  HookEnvironment environment = fake_environment(selector);
  check_reply(run_hook(options_for(selector), payload, environment));
  return 0;
}
