#pragma once

// What the tests of the agents' hooks share: a hook run with policy, audit and file system in
// memory, fixtures and the answer's one JSON object. tests/unit/test_hooks_agents.cpp and each
// agent's own tests/unit/test_hooks_agent_<agent>.cpp use it.

#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "hooks/hook_run.hpp"
#include "test_hooks_support.hpp"

namespace sandshim::testing::agents {

using namespace sandshim::hooks;
inline const std::string k_shim_dir = "/home/user/.local/share/sandshim/bin";

// Policy, audit and file system of a hook run, in memory.
struct FakeWorld {
  sandshim::shim::Policy policy;
  std::vector<sandshim::audit::DecisionRecord> records;
  std::vector<std::pair<std::string, sandshim::audit::DecisionCompletion>> completions;
  std::vector<std::pair<std::string, std::string>> closed_sessions;  // (agent, session id)
  bool audit_fails = false;
  bool policy_fails = false;
  std::vector<std::string> session_scripts;  // this session's Claude Code env files
  std::string env_file;                      // $CLAUDE_ENV_FILE at SessionStart
  std::vector<std::pair<std::string, std::string>> appended;
  std::string agent_path = "/usr/local/bin:/usr/bin:/bin";  // the PATH the hook runs with
  std::map<std::filesystem::path, std::string> files;       // what read_script finds

  FakeWorld() {
    spdlog::set_level(spdlog::level::err);
    policy.images = {{"python", "i"}, {"python3", "i"}, {"node", "i"}, {"sh", "i"}};
    policy.shim_dir = k_shim_dir;
  }

  HookEnvironment env() {
    HookEnvironment e;
    e.load_policy = [this](const std::filesystem::path&) {
      if (policy_fails) {
        throw sandshim::Fatal("bad config");
      }
      return policy;
    };
    e.record_decision = [this](const sandshim::shim::Policy&,
                               const sandshim::audit::DecisionRecord& record) {
      if (audit_fails) {
        throw sandshim::Fatal("cannot open the audit database");
      }
      records.push_back(record);
      return std::string("d1");
    };
    e.complete_decision = [this](const sandshim::shim::Policy&, const std::string& id,
                                 const sandshim::audit::DecisionCompletion& completion) {
      completions.emplace_back(id, completion);
      return true;
    };
    e.close_session = [this](const sandshim::shim::Policy&, const std::string& agent,
                             const std::string& session_id) {
      closed_sessions.emplace_back(agent, session_id);
      return size_t{1};
    };
    e.sandshim = "/usr/local/bin/sandshim";
    e.agent_path = agent_path;
    e.first_line_of = [](const std::string&, const std::filesystem::path&) {
      return std::optional<std::string>();
    };
    e.exists = [](const std::filesystem::path&) { return true; };
    e.read_script = [this](const std::filesystem::path& file) {
      auto found = files.find(file);
      return found == files.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
    e.now_ms = [] { return int64_t{1000}; };
    e.claude_env_file = env_file;
    e.claude_session_env_dir = "/home/user/.claude/session-env";
    e.append_text = [this](const std::filesystem::path& file, const std::string& text) {
      appended.emplace_back(file.string(), text);
      return true;
    };
    e.session_scripts = [this](const std::filesystem::path& dir) {
      return dir == "/home/user/.claude/session-env/abc123" ? session_scripts
                                                            : std::vector<std::string>();
    };
    return e;
  }

  HookReply run(const std::string& payload, HookOptions options = {}) {
    HookEnvironment environment = env();
    return run_hook(options, payload, environment);
  }
};

inline std::string fixture(const std::string& name) {
  return testing::read_text(testing::data_dir() / "hooks" / name);
}

// `--agent FLAG`.
inline HookOptions agent(std::string_view flag) {
  HookOptions options;
  options.agent = agent_named(flag);
  REQUIRE(options.agent);
  return options;
}

inline nlohmann::json out_json(const HookReply& reply) {
  INFO("stdout: " << reply.out);
  REQUIRE(!reply.out.empty());
  REQUIRE(reply.out.back() == '\n');
  REQUIRE(reply.out.find('\n') == reply.out.size() - 1);  // one line, one object
  nlohmann::json parsed = nlohmann::json::parse(reply.out);
  REQUIRE(parsed.is_object());
  return parsed;
}

}  // namespace sandshim::testing::agents
