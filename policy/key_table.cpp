#include "policy/key_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "audit/environment.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/glob.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "egress/allowlist.hpp"
#include "policy/engine_list.hpp"
#include "policy/masks.hpp"
#include "policy/reach.hpp"

namespace sandshim::shim {

namespace {

template <typename T>
Looser larger_is_looser(T Policy::*field) {
  return [field](const Policy& than, const Policy& candidate, std::string_view) {
    return candidate.*field > than.*field;
  };
}

// Choices are ordered loosest first, so a smaller enum value is looser.
template <typename Enum>
Looser larger_is_looser_enum(Enum Policy::*field) {
  return [field](const Policy& than, const Policy& candidate, std::string_view) {
    return static_cast<int>(candidate.*field) < static_cast<int>(than.*field);
  };
}

template <typename T>
Renderer render_with(T Policy::*field, std::string (*format)(T)) {
  return [field, format](const Policy& p, std::string_view) { return format(p.*field); };
}

template <typename T>
std::optional<std::string> store_at_least(T& field, std::optional<T> parsed,
                                          const std::string& expected, T min = T{}) {
  T value = parsed.value_or(T{});  // value_or: GCC 12 misreads optional's storage otherwise
  if (!parsed.has_value() || value < min) {
    return "expected " + expected;
  }
  field = value;
  return std::nullopt;
}

std::optional<int64_t> parse_count(const std::string& text, int64_t min, int64_t max) {
  std::string s = trim(text);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 12) {
    return std::nullopt;
  }
  int64_t value = std::stoll(s);
  return value >= min && value <= max ? std::optional(value) : std::nullopt;
}

std::optional<double> parse_cpus(const std::string& text) {
  std::string s = trim(text);
  char* end = nullptr;
  double value = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value) || value < 0.01 ||
      value > 1024) {
    return std::nullopt;
  }
  return value;
}

std::optional<bool> parse_bool(const std::string& text) {
  std::string s = trim(text);
  if (s == "true" || s == "yes" || s == "on" || s == "1") {
    return true;
  }
  if (s == "false" || s == "no" || s == "off" || s == "0") {
    return false;
  }
  return std::nullopt;
}

std::string format_count(int64_t value) {
  return std::to_string(value);
}

std::string format_cpus(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string format_bool(bool value) {
  return value ? "true" : "false";
}

using Check = std::function<std::optional<std::string>(const std::string&)>;

std::optional<std::string> absolute_or_empty(const std::string& v) {
  if (!v.empty() && v[0] != '/') {
    return std::string("expected an absolute path");
  }
  return std::nullopt;
}

std::optional<std::string> valid_engine(const std::string& v) {
  if (v != "docker" && v != "podman" && v != "auto") {
    return std::string("expected docker, podman or auto");
  }
  return std::nullopt;
}

// A key of placement: only trusted layers set it, so a workspace never steers where runs go.
Key as_trusted(Key key) {
  key.info.trust = KeyTrust::trusted;
  key.looser = {};
  return key;
}

std::optional<std::string> valid_user(const std::string& v) {
  if (v == "auto") {
    return std::nullopt;
  }
  size_t colon = v.find(':');
  if (colon == std::string::npos || !parse_count(v.substr(0, colon), 1, 4294967294) ||
      !parse_count(v.substr(colon + 1), 0, 4294967294)) {
    return std::string("expected auto or UID:GID with a non-zero UID");
  }
  return std::nullopt;
}

std::optional<std::string> valid_hostname(const std::string& v) {
  if (v.empty() || v.size() > 63 ||
      v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    return std::string("expected a hostname of lowercase letters, digits and '-'");
  }
  return std::nullopt;
}

// Environment names that would steer the engine, the loader or sandshim itself never pass.
std::optional<std::string> safe_env_patterns(const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    for (const char* reserved : {"PATH", "HOME", "LD_PRELOAD", "DOCKER_HOST", "SANDSHIM_CONFIG"}) {
      if (glob_match(p, reserved)) {
        return "pattern " + quoted(p) + " would pass " + reserved +
               ", which never enters a sandbox";
      }
    }
  }
  return std::nullopt;
}

Key byte_size_key(std::string name, std::string help, uint64_t Policy::*field, uint64_t min) {
  return {{name, help, format_byte_size(Policy{}.*field), KeyTrust::tighten},
          [field, min](Policy& p, std::string_view, const std::string& v) {
            return store_at_least(
                p.*field, parse_byte_size(v),
                "a size of at least " + format_byte_size(min) + " such as 512m or 1g", min);
          },
          larger_is_looser(field),
          render_with(field, format_byte_size)};
}

Key count_key(std::string name, std::string help, int64_t Policy::*field, int64_t min,
              int64_t max) {
  return {{name, help, std::to_string(Policy{}.*field), KeyTrust::tighten},
          [field, min, max](Policy& p, std::string_view, const std::string& v) {
            return store_at_least(
                p.*field, parse_count(v, min, max),
                "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
          },
          larger_is_looser(field),
          render_with(field, format_count)};
}

Key duration_key(std::string name, std::string help, int64_t Policy::*field, std::string expected,
                 int64_t min = 0) {
  return {{name, help, format_duration_ms(Policy{}.*field), KeyTrust::tighten},
          [field, expected, min](Policy& p, std::string_view, const std::string& v) {
            return store_at_least(p.*field, parse_duration_ms(v), expected, min);
          },
          larger_is_looser(field),
          render_with(field, format_duration_ms)};
}

// pool.claim_wait: a duration, or 0 (a run that finds its pool empty never waits).
Key claim_wait_key() {
  Key key = duration_key("pool.claim_wait",
                         "how long a run that finds the pool empty waits for a container being "
                         "started before it starts cold (0: never)",
                         &Policy::pool_claim_wait_ms, "");
  key.set = [](Policy& p, std::string_view, const std::string& v) {
    std::string text = trim(v);
    bool zero = text == "0" || text == "0s" || text == "0ms";
    return store_at_least(p.pool_claim_wait_ms,
                          zero ? std::optional<int64_t>(0) : parse_duration_ms(text),
                          std::string("0 or a duration such as 500ms or 2s"));
  };
  return key;
}

// The words of each choice, in enum order: loosest first.
constexpr std::array<std::string_view, 3> k_network_words = {"bridge", "allowlist", "none"};
constexpr std::array<std::string_view, 3> k_workspace_words = {"rw", "wrap", "ro"};
constexpr std::array<std::string_view, 2> k_unenforced_words = {"accept", "refuse"};
constexpr std::array<std::string_view, 3> k_hook_mode_words = {"path", "wrap", "deny"};
constexpr std::array<std::string_view, 2> k_pool_start_words = {"launcher", "exec"};
constexpr std::array<std::string_view, 2> k_runtime_words = {"runc", "runsc"};
constexpr std::array<std::string_view, 2> k_cache_words = {"on", "off"};
constexpr std::array<std::string_view, 2> k_engine_api_words = {"off", "on"};
constexpr std::array<std::string_view, 3> k_version_fit_words = {"host", "warn", "off"};

template <typename Enum, size_t N>
std::optional<Enum> enum_from(const std::array<std::string_view, N>& words, std::string_view word) {
  auto found = std::find(words.begin(), words.end(), word);
  return found == words.end() ? std::nullopt
                              : std::optional(static_cast<Enum>(found - words.begin()));
}

template <typename Enum, size_t N>
std::string word_of(const std::array<std::string_view, N>& words, Enum value) {
  return std::string(words.at(static_cast<size_t>(value)));
}

// A choice among words ordered from loosest to strictest, held as an enum in the same order.
template <typename Enum, size_t N>
Key choice_key(std::string name, std::string help, Enum Policy::*field,
               const std::array<std::string_view, N>& words, KeyTrust trust = KeyTrust::tighten) {
  std::vector<std::string> all(words.begin(), words.end());
  return {{name, help, word_of(words, Policy{}.*field), trust},
          [field, &words, all](Policy& p, std::string_view,
                               const std::string& value) -> std::optional<std::string> {
            auto parsed = enum_from<Enum>(words, trim(value));
            if (!parsed) {
              return "expected one of: " + join(all, ", ");
            }
            p.*field = *parsed;
            return std::nullopt;
          },
          trust == KeyTrust::trusted ? Looser{} : larger_is_looser_enum(field),
          [field, &words](const Policy& p, std::string_view) { return word_of(words, p.*field); }};
}

// A key that chooses what runs or where records go: only trusted layers set it.
Key trusted_key(std::string name, std::string help, std::string Policy::*field, Check check = {}) {
  return {{name, help, Policy{}.*field, KeyTrust::trusted},
          [field, check](Policy& p, std::string_view,
                         const std::string& value) -> std::optional<std::string> {
            std::string v = trim(value);
            if (check) {
              if (auto error = check(v)) {
                return error;
              }
            }
            p.*field = v;
            return std::nullopt;
          },
          {},
          [field](const Policy& p, std::string_view) { return p.*field; }};
}

// env.allow lets names in (trusted); env.deny keeps them out, so adding to it never loosens.
Key pattern_list_key(std::string name, std::string help, std::vector<std::string> Policy::*field,
                     bool lets_names_in) {
  KeyTrust trust = lets_names_in ? KeyTrust::trusted : KeyTrust::tighten;
  Looser never_looser = [](const Policy&, const Policy&, std::string_view) { return false; };
  return {{name, help, "", trust},
          [field, lets_names_in](Policy& p, std::string_view,
                                 const std::string& v) -> std::optional<std::string> {
            auto patterns = split_words(v);
            if (lets_names_in) {
              if (auto error = safe_env_patterns(patterns)) {
                return error;
              }
            }
            (p.*field).insert((p.*field).end(), patterns.begin(), patterns.end());
            return std::nullopt;
          },
          lets_names_in ? Looser{} : never_looser,
          [field](const Policy& p, std::string_view) { return join(p.*field, " "); }};
}

Key cpus_key() {
  return {{"sandbox.cpus", "CPU limit, in cores", "1", KeyTrust::tighten},
          [](Policy& p, std::string_view, const std::string& v) {
            return store_at_least(p.cpus, parse_cpus(v), "a number of cores such as 0.5 or 2");
          },
          larger_is_looser(&Policy::cpus),
          render_with(&Policy::cpus, format_cpus)};
}

Key audit_required_key() {
  return {{"audit.required", "refuse to run when the audit database is unusable", "true",
           KeyTrust::tighten_pinned},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            auto parsed = parse_bool(v);
            if (!parsed) {
              return std::string("expected true or false");
            }
            p.audit_required = *parsed;
            return std::nullopt;
          },
          [](const Policy& than, const Policy& candidate, std::string_view) {
            return than.audit_required && !candidate.audit_required;
          },
          render_with(&Policy::audit_required, format_bool)};
}

Key tail_bytes_key() {
  return {{"audit.tail_bytes", "bytes of stdout and stderr kept in the audit (0: none)", "4k",
           KeyTrust::trusted},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            auto parsed = parse_byte_size(v);
            if (!parsed || *parsed > (1ULL << 20)) {
              return std::string("expected a size from 0 to 1m");
            }
            p.audit_tail_bytes = *parsed;
            return std::nullopt;
          },
          {},
          render_with(&Policy::audit_tail_bytes, format_byte_size)};
}

Key tmp_exec_key() {
  return {{"sandbox.tmp_exec",
           "true lets programs exec from /tmp (frameworks that must), giving up its noexec "
           "hygiene; trusted config files only",
           "false", KeyTrust::trusted},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            auto parsed = parse_bool(v);
            if (!parsed) {
              return std::string("expected true or false");
            }
            p.tmp_exec = *parsed;
            return std::nullopt;
          },
          {},
          render_with(&Policy::tmp_exec, format_bool)};
}

// `images.COMMAND = IMAGE`: which image runs a shimmed command.
std::optional<std::string> set_image(Policy& p, std::string_view command,
                                     const std::string& value) {
  std::string image = trim(value);
  if (command.empty() || command.find('/') != std::string::npos || command == "sandshim") {
    return "expected images.COMMAND with a plain command name";
  }
  std::string name(command);
  if (image.empty()) {
    p.images.erase(name);
    return std::nullopt;
  }
  if (image[0] == '-' || image.find_first_of(" \t\r\n") != std::string::npos) {
    return "expected an image reference such as python:3.12-alpine";
  }
  p.images[name] = image;
  return std::nullopt;
}

Key images_key() {
  return {{"images.COMMAND",
           "image that runs COMMAND (python, python3, node, sh, ...); `host`: the host's own "
           "interpreter",
           "sandshim/<name>:bookworm", KeyTrust::trusted},
          set_image,
          {},
          [](const Policy& p, std::string_view command) {
            auto it = p.images.find(std::string(command));
            return it == p.images.end() ? std::string() : it->second;
          }};
}

egress::AllowList allow_list_of(const std::vector<std::string>& texts) {
  egress::AllowList list;
  (void)egress::parse_allow_rules(join(texts, " "), list.rules);
  return list;
}

// network.allow = NAME *.SUFFIX NAME:PORT: replaces the list; `+ NAME...` adds to the one the
// layers above set. A layer that may only tighten may only shrink it.
Key network_allow_key() {
  return {
      {"network.allow",
       "names the egress proxy lets through under sandbox.network = allowlist: NAME, "
       "*.SUFFIX or NAME:PORT (ports 443 and 80 unless given); `+ NAME` adds to the list above",
       "", KeyTrust::tighten},
      [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
        std::string text = trim(v);
        bool add = text.starts_with('+');
        std::vector<egress::AllowRule> rules;
        if (auto error = egress::parse_allow_rules(add ? text.substr(1) : text, rules)) {
          return error;
        }
        if (!add) {
          p.network_allow.clear();
        }
        for (const auto& rule : rules) {
          p.network_allow.push_back(egress::to_string(rule));
        }
        return std::nullopt;
      },
      [](const Policy& than, const Policy& candidate, std::string_view) {
        return !allow_list_of(than.network_allow).covers(allow_list_of(candidate.network_allow));
      },
      [](const Policy& p, std::string_view) { return join(p.network_allow, " "); }};
}

// network.resolve = NAME=ADDRESS: the proxy connects NAME to exactly ADDRESS, even a loopback or
// private one (a test server, an internal mirror); it lets addresses in, so only trusted layers.
Key network_resolve_key() {
  return {{"network.resolve",
           "NAME=ADDRESS pairs the egress proxy uses instead of DNS; the only way a name in "
           "network.allow reaches a loopback, link-local or private address",
           "", KeyTrust::trusted},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            return egress::parse_resolve_entries(v, p.network_resolve);
          },
          {},
          [](const Policy& p, std::string_view) {
            std::vector<std::string> items;
            for (const auto& [name, address] : p.network_resolve) {
              items.push_back(name + "=" + address);
            }
            return join(items, " ");
          }};
}

Key user_pins_key();
Key user_ceilings_key();

// sandbox.hide adds masks (never looser, any layer); sandbox.unhide shows files (trusted only).
Key glob_list_key(std::string name, std::string help, std::vector<std::string> Policy::*field,
                  bool shows_files) {
  Looser never_looser = [](const Policy&, const Policy&, std::string_view) { return false; };
  return {{name, help, "", shows_files ? KeyTrust::trusted : KeyTrust::tighten},
          [field](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            auto globs = split_words(v);
            for (const auto& glob : globs) {
              if (auto problem = invalid_hide_glob(glob); !problem.empty()) {
                return quoted(glob) + ": " + problem;
              }
            }
            (p.*field).insert((p.*field).end(), globs.begin(), globs.end());
            return std::nullopt;
          },
          shows_files ? Looser{} : never_looser,
          [field](const Policy& p, std::string_view) { return join(p.*field, " "); }};
}

// sandbox.writable: workspace sub-paths mounted read-write, so only trusted layers name them.
Key writable_key() {
  return {{"sandbox.writable",
           "workspace sub-paths made writable (never .git, .sandshim.conf, agent or hook files)",
           "", KeyTrust::trusted},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            for (const auto& path : split_words(v)) {
              if (auto problem = invalid_writable_path(path); !problem.empty()) {
                return quoted(path) + ": " + problem;
              }
              p.writable.push_back(path);
            }
            return std::nullopt;
          },
          {},
          [](const Policy& p, std::string_view) { return join(p.writable, " "); }};
}

// Every key, in the order `sandshim policy keys` and the docs show them.
std::vector<Key> make_key_table() {
  return {
      trusted_key("engine.name",
                  "container engine: docker, podman, or auto (docker when its client is on "
                  "engine.search_path, else podman)",
                  &Policy::engine, valid_engine),
      trusted_key("engine.path",
                  "absolute path of the engine client; empty: search engine.search_path",
                  &Policy::engine_path, absolute_or_empty),
      trusted_key("engine.search_path",
                  "directories searched for the engine client (never the caller's PATH)",
                  &Policy::engine_search_path),
      trusted_key("engine.endpoint",
                  "engine endpoint: empty for the local socket, unix:///path, ssh://user@host or "
                  "tcp://host:2376 (with engine.tls_cert_path)",
                  &Policy::endpoint, valid_endpoint),
      trusted_key("engine.tls_cert_path",
                  "directory with ca.pem, cert.pem and key.pem for a tcp:// endpoint (an entry "
                  "of engine.endpoints may name its own with tls_cert_path=)",
                  &Policy::tls_cert_path, absolute_or_empty),
      trusted_key("engine.ssh_identity",
                  "private key for an ssh:// endpoint (no passphrase; an entry of "
                  "engine.endpoints may name its own with ssh_identity=); empty: ssh's default "
                  "keys of the user sandshim runs as",
                  &Policy::ssh_identity, absolute_or_empty),
      trusted_key("engine.ssh_known_hosts",
                  "known_hosts file holding the host key of an ssh:// endpoint (never accepted "
                  "on first sight; an entry may name its own with ssh_known_hosts=); empty: "
                  "~/.ssh/known_hosts of the user sandshim runs as",
                  &Policy::ssh_known_hosts, absolute_or_empty),
      endpoints_key(),
      require_labels_key(),
      as_trusted(count_key("engine.max_runs",
                           "runs in flight from this machine on each engine of engine.endpoints "
                           "whose entry sets no max_runs=; a run waits for a free one up to "
                           "engine.place_wait (0: no cap)",
                           &Policy::engine_max_runs, 0, 4096)),
      as_trusted(duration_key("engine.place_wait",
                              "how long a run waits for an engine of engine.endpoints under its "
                              "max_runs before it is refused",
                              &Policy::engine_place_wait_ms, "a duration such as 30s or 2m")),
      choice_key("engine.api",
                 "the cold run and its removal: on (create, attach, start, wait, kill and "
                 "remove over the Engine API socket; podman's when its API service answers) "
                 "or off (the engine's `run` client); warm runs and remote endpoints always "
                 "use the client",
                 &Policy::engine_api, k_engine_api_words, KeyTrust::trusted),
      choice_key("sandbox.network",
                 "network of the container: none, allowlist (only network.allow, through "
                 "sandshim's egress proxy), or bridge (all of it)",
                 &Policy::network, k_network_words),
      network_allow_key(),
      network_resolve_key(),
      choice_key(
          "sandbox.workspace",
          "workspace mount: ro (read-only), rw (agent and hook files stay read-only; git writes "
          "through a stage that never carries its config or hooks back), or wrap (rw for an "
          "agent's whole shell command in wrap mode, `sandshim -c`, ro for every other run; "
          "the default, through a broker too)",
          &Policy::workspace_mode, k_workspace_words),
      byte_size_key("sandbox.memory", "memory limit (swap is not allowed on top)",
                    &Policy::memory_bytes, 6ULL << 20),
      cpus_key(),
      count_key("sandbox.pids", "maximum number of processes and threads", &Policy::pids, 8, 65536),
      duration_key("sandbox.timeout", "deadline of a run; the container is killed when it passes",
                   &Policy::timeout_ms, "a duration such as 30s, 2m or 500ms"),
      byte_size_key("sandbox.tmp_size", "size of the writable, noexec /tmp", &Policy::tmp_bytes,
                    1ULL << 20),
      tmp_exec_key(),
      byte_size_key("sandbox.shm_size", "size of /dev/shm", &Policy::shm_bytes, 1ULL << 20),
      count_key("sandbox.nofile", "open files limit (ulimit -n)", &Policy::nofile, 16, 1048576),
      count_key(
          "sandbox.nproc",
          "processes limit of the container user (ulimit -u; counts that uid's host processes too)",
          &Policy::nproc, 16, 1048576),
      trusted_key("sandbox.user", "container user: auto (the caller, or 65534 for root) or UID:GID",
                  &Policy::user, valid_user),
      trusted_key("sandbox.hostname", "hostname inside the container", &Policy::hostname,
                  valid_hostname),
      glob_list_key("sandbox.hide",
                    "more workspace globs masked inside the sandbox (NAME, DIR/, or a path with /)",
                    &Policy::hide, false),
      glob_list_key("sandbox.unhide", "globs of the built-in or added sandbox.hide list to show",
                    &Policy::unhide, true),
      count_key("sandbox.hide_limit",
                "workspace entries searched for sandbox.hide; past it the run is refused",
                &Policy::hide_limit, 1, 100'000'000),
      writable_key(),
      choice_key("sandbox.runtime",
                 "OCI runtime: runc, or runsc (gVisor; install/deps.sh --with-gvisor registers it)",
                 &Policy::runtime, k_runtime_words),
      choice_key("sandbox.cache",
                 "on: the interpreters' caches (pip, npm, pycache, XDG) survive between runs",
                 &Policy::cache, k_cache_words),
      byte_size_key("sandbox.cache_size", "the cache is emptied before a run once past this size",
                    &Policy::cache_bytes, 1ULL << 20),
      choice_key("sandbox.version_fit",
                 "when the project asks for a node or python its image lacks (package.json's "
                 "engines.node or else its installed dependencies', .nvmrc, .node-version; "
                 ".python-version, pyproject.toml's "
                 "requires-python): host runs the host's read-only in the sandbox and says so, "
                 "warn keeps the image and says so, off says nothing (through a broker: the system "
                 "file's)",
                 &Policy::version_fit, k_version_fit_words, KeyTrust::trusted),
      choice_key("limits.unenforced",
                 "limits the engine cannot enforce (rootless on cgroup v1, a missing "
                 "controller): refuse to run, or accept and record them",
                 &Policy::limits_unenforced, k_unenforced_words),
      pattern_list_key("env.allow", "more variable names or patterns passed into the sandbox",
                       &Policy::env_allow, true),
      pattern_list_key("env.deny", "more variable names or patterns never passed (deny wins)",
                       &Policy::env_deny, false),
      images_key(),
      trusted_key("audit.db", "audit database path; empty: $XDG_STATE_HOME/sandshim/audit.db",
                  &Policy::audit_db, absolute_or_empty),
      audit_required_key(),
      tail_bytes_key(),
      trusted_key("audit.key_file",
                  "HMAC-SHA256 key of the audit chain, made with mode 0400 on first use; empty: "
                  "the chain is unkeyed",
                  &Policy::audit_key_file, absolute_or_empty),
      trusted_key("audit.anchor_file",
                  "root-owned append-only file the audit writer appends each chain head to; "
                  "empty: none",
                  &Policy::audit_anchor_file, absolute_or_empty),
      choice_key("hook.mode", "what agent hooks do: path (shims first on PATH), wrap, or deny",
                 &Policy::hook_mode, k_hook_mode_words, KeyTrust::tighten_pinned),
      trusted_key("shim.dir", "directory of the shim links; empty: $XDG_DATA_HOME/sandshim/bin",
                  &Policy::shim_dir, absolute_or_empty),
      trusted_key("broker.mode",
                  "auto (use the broker when one answers), required (fail closed without one; "
                  "only /etc/sandshim/config decides) or off",
                  &Policy::broker_mode,
                  [](const std::string& v) -> std::optional<std::string> {
                    if (v != "auto" && v != "required" && v != "off") {
                      return std::string("expected auto, required or off");
                    }
                    return std::nullopt;
                  }),
      trusted_key("broker.socket", "the broker's socket; empty: /run/sandshim/broker.sock",
                  &Policy::broker_socket, absolute_or_empty),
      count_key("pool.size",
                "warm containers kept started per image, workspace and policy (0: off)",
                &Policy::pool_size, 0, 32),
      duration_key("pool.idle_ttl",
                   "how long a warm container may wait unused before it is removed",
                   &Policy::pool_idle_ttl_ms, "a duration from 1s such as 30s or 10m", 1000),
      choice_key("pool.start",
                 "how a warm run starts its command: launcher (sandshim's, in the container; "
                 "docker only) or exec (`docker exec`)",
                 &Policy::pool_start, k_pool_start_words, KeyTrust::trusted),
      count_key("pool.max",
                "the most warm containers per image, workspace and policy (idle or starting) "
                "the pool grows to when runs draw faster than it refills; at most pool.size "
                "means it never grows",
                &Policy::pool_max, 0, 32),
      duration_key("pool.shrink_after",
                   "how long without a run before a grown pool returns to pool.size (a container "
                   "started above it is claimable that long)",
                   &Policy::pool_shrink_after_ms, "a duration from 1s such as 30s or 10m", 1000),
      claim_wait_key(),
      user_pins_key(),
      user_ceilings_key(),
  };
}

}  // namespace

// Built on first use, not at start-up: a process that reads no setting (a hook without config
// files) never pays for its ~55 keys (~150,000 instructions).
const std::vector<Key>& key_table() {
  static const std::vector<Key> table = make_key_table();
  return table;
}

// The key a setting names, and COMMAND for images.COMMAND.
std::pair<const Key*, std::string_view> find_key(std::string_view name) {
  std::string_view subkey;
  if (name.starts_with("images.")) {
    subkey = name.substr(7);
    name = "images.COMMAND";
  }
  for (const auto& key : key_table()) {
    if (key.info.name == name) {
      return {&key, subkey};
    }
  }
  return {nullptr, subkey};
}

namespace {

// "a, b c" -> a, b, c: a list of words separated by commas or spaces.
std::vector<std::string> split_list(std::string text) {
  std::replace(text.begin(), text.end(), ',', ' ');
  return split_words(text);
}

// "a <= 1, b<=2" -> "a <= 1", "b<=2": items separated by commas.
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = std::min(text.find(',', begin), text.size());
    if (std::string item = trim(text.substr(begin, end - begin)); !item.empty()) {
      items.push_back(item);
    }
    begin = end + 1;
  }
  return items;
}

bool names_a_key(const std::string& pattern) {
  for (const auto& key : key_table()) {
    if (glob_match(pattern, key.info.name) || glob_match(pattern, "images.x")) {
      return true;
    }
  }
  return false;
}

// users.pin = hook.mode, engine.*: keys the user layers may only tighten in direct mode too.
Key user_pins_key() {
  return {{"users.pin",
           "keys (or patterns such as engine.*) that user files and flags may only tighten in "
           "direct mode too; broker mode pins every key",
           "", KeyTrust::system_only},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            auto patterns = split_list(v);
            for (const auto& pattern : patterns) {
              if (!names_a_key(pattern)) {
                return "pattern " + quoted(pattern) + " names no key";
              }
            }
            p.user_pins = patterns;
            return std::nullopt;
          },
          {},
          [](const Policy& p, std::string_view) { return join(p.user_pins, ", "); }};
}

std::optional<std::string> add_ceiling(std::map<std::string, std::string>& ceilings,
                                       const std::string& item) {
  size_t at = item.find("<=");
  std::string name = trim(item.substr(0, at));
  auto [key, subkey] = find_key(name);
  if (at == std::string::npos || key == nullptr) {
    return "expected KEY<=CEILING, such as sandbox.timeout<=10m, not " + quoted(item);
  }
  if (key->info.trust != KeyTrust::tighten) {
    return name + " can never be opened to users (" + describe_trust(key->info.trust) + ")";
  }
  std::string ceiling = trim(item.substr(at + 2));
  Policy probe;
  if (auto error = key->set(probe, subkey, ceiling)) {
    return "ceiling of " + name + ": " + *error;
  }
  ceilings[name] = key->render(probe, subkey);
  return std::nullopt;
}

// users.may_set = sandbox.timeout<=10m, pool.size<=4: limits a user may loosen, up to a ceiling.
Key user_ceilings_key() {
  return {{"users.may_set",
           "limits that user files and flags may loosen up to a ceiling, such as "
           "sandbox.timeout<=10m, pool.size<=4 (engine, image, audit and hook keys never)",
           "", KeyTrust::system_only},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            std::map<std::string, std::string> ceilings;
            for (const auto& item : split_commas(v)) {
              if (auto error = add_ceiling(ceilings, item)) {
                return error;
              }
            }
            p.user_ceilings = ceilings;
            return std::nullopt;
          },
          {},
          [](const Policy& p, std::string_view) {
            std::vector<std::string> items;
            for (const auto& [key, ceiling] : p.user_ceilings) {
              items.push_back(key + "<=" + ceiling);
            }
            return join(items, ", ");
          }};
}
}  // namespace

std::string to_string(Network value) {
  return word_of(k_network_words, value);
}

std::string to_string(WorkspaceMode value) {
  return word_of(k_workspace_words, value);
}

std::string to_string(Runtime value) {
  return word_of(k_runtime_words, value);
}

std::string to_string(Cache value) {
  return word_of(k_cache_words, value);
}

std::string to_string(Unenforced value) {
  return word_of(k_unenforced_words, value);
}

std::string to_string(HookMode value) {
  return word_of(k_hook_mode_words, value);
}

std::optional<HookMode> hook_mode_from(std::string_view word) {
  return enum_from<HookMode>(k_hook_mode_words, word);
}

}  // namespace sandshim::shim
