#include "policy/limit_hints.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/strings.hpp"

namespace sandshim::shim {

namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](const char* needle) { return contains(text, needle); });
}

bool any_line(const std::string& text, const std::function<bool(const std::string&)>& test) {
  auto lines = split_lines(text);
  return std::any_of(lines.begin(), lines.end(), test);
}

// The absolute paths a line names: each run of characters after a quote or blank that starts
// with '/'.
std::vector<std::string> absolute_paths(const std::string& line) {
  std::vector<std::string> paths;
  for (size_t at = line.find('/'); at != std::string::npos; at = line.find('/', at + 1)) {
    if (at == 0 || std::string(" '\"`(:=").find(line[at - 1]) != std::string::npos) {
      size_t end = line.find_first_of(" '\"`):,\n", at);
      paths.push_back(line.substr(at, end == std::string::npos ? end : end - at));
    }
  }
  return paths;
}

bool under(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || path.starts_with(dir + "/"));
}

// A write the read-only workspace refused: EROFS on a relative path or one under the workspace
// (the image's root is read-only too, by design, and no key changes that).
bool workspace_write_refused(const LimitFacts& facts) {
  return any_line(facts.stderr_last, [&](const std::string& line) {
    if (!contains_any(line, {"Read-only file system", "EROFS"})) {
      return false;
    }
    auto paths = absolute_paths(line);
    return paths.empty() || std::any_of(paths.begin(), paths.end(), [&](const std::string& p) {
             return under(p, facts.workspace);
           });
  });
}

// Exec refused on the noexec /tmp: a permission error naming a path under /tmp, the dynamic
// loader's mmap refusal, or a framework saying so.
bool tmp_exec_refused(const LimitFacts& facts) {
  return any_line(facts.stderr_last, [](const std::string& line) {
    bool names_tmp = contains(line, "/tmp");
    return contains(line, "exec permission") ||
           (names_tmp && contains_any(line, {"Permission denied", "EACCES",
                                             "failed to map segment from shared object"}));
  });
}

// A positive count is decisive; zero is not (the cgroup is sampled, and a run that ends right
// after a refused fork is gone before the next sample), so a failed run's own words count too.
bool pids_cap_hit(const LimitFacts& facts) {
  if (facts.pids_refused.value_or(0) > 0) {
    return true;
  }
  return facts.exit_code != 0 &&
         contains_any(facts.stderr_last, {"can't start new thread", "Cannot fork",
                                          "fork: retry: Resource temporarily unavailable",
                                          "pthread_create failed", "EAGAIN: spawn"});
}

// A connection that found no network: the resolver's and the clients' own words (npm offline,
// pip's urllib3, curl, node, python's socket), which a run without one ends on.
bool network_missing(const LimitFacts& facts) {
  return contains_any(facts.stderr_last,
                      {"ENOTCACHED", "EAI_AGAIN", "ENOTFOUND", "ENETUNREACH",
                       "Temporary failure in name resolution", "Name or service not known",
                       "Network is unreachable", "NewConnectionError", "Could not resolve host"});
}

bool tmp_full(const LimitFacts& facts) {
  return facts.exit_code != 0 &&
         contains_any(facts.stderr_last, {"No space left on device", "ENOSPC"});
}

int64_t raised(int64_t value, int64_t factor, int64_t ceiling) {
  return std::min(value * factor, ceiling);
}

LimitHint hint(const std::string& key, std::string value, std::string suggested,
               const std::string& config_file, std::string reason) {
  return {key, std::move(value), std::move(suggested), config_file, std::move(reason), ""};
}

// A run that failed before its deadline: /tmp full or noexec, or the workspace read-only.
void add_failure_hints(std::vector<LimitHint>& hints, const LimitFacts& facts, const Policy& policy,
                       const std::string& config_file) {
  if (tmp_full(facts)) {
    hints.push_back(hint("sandbox.tmp_size", format_byte_size(policy.tmp_bytes),
                         format_byte_size(policy.tmp_bytes * 4), config_file,
                         "a write found no space left (/tmp is full)"));
  }
  if (policy.network == Network::none && network_missing(facts)) {
    hints.push_back(hint("sandbox.network", "none", "allowlist", config_file,
                         "a connection found no network: the sandbox has none"));
    hints.back().narrower =
        "`network.allow = HOST …` beside it names all the run may reach: registry.npmjs.org, or "
        "pypi.org files.pythonhosted.org; the audit records each connection";
  }
  if (!policy.tmp_exec && tmp_exec_refused(facts)) {
    hints.push_back(hint("sandbox.tmp_exec", "false", "true", config_file,
                         "/tmp is noexec (the line gives up that hygiene for this user)"));
  }
  // A run's policy holds rw or ro (`wrap` resolved for it): anything but rw was read-only.
  if (policy.workspace_mode != WorkspaceMode::rw && workspace_write_refused(facts)) {
    hints.push_back(hint("sandbox.workspace", "ro", "rw", config_file,
                         "a write to the read-only workspace was refused"));
    hints.back().narrower =
        "`sandbox.writable = PATH` opens only that sub-path, `sandbox.cache = on` gives the "
        "interpreters a cache that survives";
  } else if (policy.workspace_mode == WorkspaceMode::rw && workspace_write_refused(facts)) {
    // What stays read-only under rw steers the host (git's hooks, agent settings); all of .git
    // through a broker or beside another run of the workspace (run/git_stage.hpp).
    hints.push_back(hint("sandbox.workspace", "rw", "", config_file,
                         "a write to git's hooks, an agent's settings or a hook file was refused; "
                         "all of .git is read-only through a broker or beside another run here"));
    hints.back().narrower =
        "they stay read-only in every run; make those writes on the host (git add, git commit…)";
  }
}

}  // namespace

std::vector<LimitHint> limit_hints(const LimitFacts& facts, const Policy& policy,
                                   const std::string& config_file) {
  std::vector<LimitHint> hints;
  if (facts.timed_out) {
    hints.push_back(hint("sandbox.timeout", format_duration_ms(policy.timeout_ms),
                         format_duration_ms(raised(policy.timeout_ms, 4, 3'600'000)), config_file,
                         "the run reached its deadline"));
  }
  if (facts.oom_killed) {
    hints.push_back(hint("sandbox.memory", format_byte_size(policy.memory_bytes),
                         format_byte_size(policy.memory_bytes * 2), config_file,
                         "the kernel killed it at the memory cap"));
  }
  if (pids_cap_hit(facts)) {
    hints.push_back(hint("sandbox.pids", std::to_string(policy.pids),
                         std::to_string(raised(policy.pids, 4, 65536)), config_file,
                         facts.pids_refused ? std::to_string(*facts.pids_refused) +
                                                  " process/thread start(s) refused at the cap"
                                            : "a process or thread could not start"));
  }
  if (facts.exit_code != 0 && !facts.timed_out) {
    add_failure_hints(hints, facts, policy, config_file);
  }
  return hints;
}

std::string describe_hint(const LimitHint& hint) {
  if (hint.suggested.empty()) {
    return "limit hit: " + hint.key + " = " + hint.value + " (" + hint.reason +
           "); no line lifts it: " + hint.narrower;
  }
  return "limit hit: " + hint.key + " = " + hint.value + " (" + hint.reason +
         "); to lift it, add `" + hint.key + " = " + hint.suggested + "` to " + hint.config_file +
         (hint.narrower.empty() ? "" : " (or, narrower: " + hint.narrower + ")");
}

std::string limit_keys(const std::vector<LimitHint>& hints) {
  std::vector<std::string> keys;
  for (const auto& h : hints) {
    keys.push_back(h.key);
  }
  return join(keys, ",");
}

std::optional<int64_t> parse_pids_events(const std::string& text) {
  for (const auto& line : split_lines(text)) {
    if (line.starts_with("max ")) {
      try {
        return std::stoll(line.substr(4));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::string pids_events_path(const std::string& container_id) {
  if (container_id.empty() || container_id.find('/') != std::string::npos) {
    return {};
  }
  const std::array<std::string, 8> candidates = {
      "/sys/fs/cgroup/pids/docker/" + container_id,
      "/sys/fs/cgroup/pids/system.slice/docker-" + container_id + ".scope",
      "/sys/fs/cgroup/pids/libpod_parent/libpod-" + container_id,
      "/sys/fs/cgroup/pids/machine.slice/libpod-" + container_id + ".scope",
      "/sys/fs/cgroup/docker/" + container_id,
      "/sys/fs/cgroup/system.slice/docker-" + container_id + ".scope",
      "/sys/fs/cgroup/libpod_parent/libpod-" + container_id,
      "/sys/fs/cgroup/machine.slice/libpod-" + container_id + ".scope"};
  std::error_code ec;
  for (const auto& dir : candidates) {
    if (std::filesystem::exists(dir + "/pids.events", ec)) {
      return dir + "/pids.events";
    }
  }
  return {};
}

}  // namespace sandshim::shim
