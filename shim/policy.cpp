#include "shim/policy.hpp"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "audit/environment.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "shim/masks.hpp"
#include "shim/reach.hpp"

namespace sandshim::shim {

namespace po = boost::program_options;

std::string Origin::describe() const {
  return line > 0 ? source + ":" + std::to_string(line) : source;
}

namespace {

// Parses `value` into the policy; returns an error text or nullopt. `tighten_only` refuses any
// value that would loosen the current one.
using Setter =
    std::function<std::optional<std::string>(Policy&, const std::string& value, bool tighten_only)>;

struct Key {
  KeyInfo info;
  Setter set;
  std::function<std::string(const Policy&)> render;
};

std::optional<std::string> loosens(const std::string& what) {
  return "would loosen the policy (" + what + "); a workspace file may only tighten it";
}

template <typename T>
std::optional<std::string> set_limit(T& field, std::optional<T> parsed, bool tighten_only,
                                     const std::string& expected, T min = T{}) {
  T value = parsed.value_or(T{});  // value_or: GCC 12 misreads optional's storage otherwise
  if (!parsed.has_value() || value < min) {
    return "expected " + expected;
  }
  if (tighten_only && value > field) {
    return loosens("larger than the current limit");
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

// A choice among words ordered from loosest to strictest.
Setter ordered_choice(std::string Policy::*field, std::vector<std::string> loosest_first) {
  return [field, loosest_first](Policy& p, const std::string& value,
                                bool tighten_only) -> std::optional<std::string> {
    std::string v = trim(value);
    auto rank = [&](const std::string& word) {
      return std::find(loosest_first.begin(), loosest_first.end(), word) - loosest_first.begin();
    };
    if (rank(v) == static_cast<long>(loosest_first.size())) {
      return "expected one of: " + join(loosest_first, ", ");
    }
    if (tighten_only && rank(v) < rank(p.*field)) {
      return loosens(p.*field + " -> " + v);
    }
    p.*field = v;
    return std::nullopt;
  };
}

// A key a workspace file may never set: engines, images, users and the audit are the user's.
Setter trusted_string(std::string Policy::*field,
                      std::function<std::optional<std::string>(const std::string&)> check) {
  return [field, check](Policy& p, const std::string& value,
                        bool tighten_only) -> std::optional<std::string> {
    if (tighten_only) {
      return "may not be set in a workspace file";
    }
    std::string v = trim(value);
    if (check) {
      if (auto error = check(v)) {
        return error;
      }
    }
    p.*field = v;
    return std::nullopt;
  };
}

std::optional<std::string> absolute_or_empty(const std::string& v) {
  if (!v.empty() && v[0] != '/') {
    return std::string("expected an absolute path");
  }
  return std::nullopt;
}

std::optional<std::string> valid_endpoint(const std::string& v) {
  if (v.empty() || v.starts_with("unix:///") || v.starts_with("ssh://") ||
      v.starts_with("tcp://")) {
    return std::nullopt;
  }
  return std::string("expected unix:///path, ssh://[user@]host or tcp://host:port");
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
  return {{name, help, format_byte_size(Policy{}.*field), true},
          [field, min](Policy& p, const std::string& v, bool tighten) {
            return set_limit(p.*field, parse_byte_size(v), tighten,
                             "a size of at least " + format_byte_size(min) + " such as 512m or 1g",
                             min);
          },
          [field](const Policy& p) { return format_byte_size(p.*field); }};
}

Key count_key(std::string name, std::string help, int64_t Policy::*field, int64_t min,
              int64_t max) {
  return {{name, help, std::to_string(Policy{}.*field), true},
          [field, min, max](Policy& p, const std::string& v, bool tighten) {
            return set_limit(
                p.*field, parse_count(v, min, max), tighten,
                "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
          },
          [field](const Policy& p) { return std::to_string(p.*field); }};
}

Key choice_key(std::string name, std::string help, std::string Policy::*field,
               std::vector<std::string> loosest_first) {
  return {{name, help, Policy{}.*field, true},
          ordered_choice(field, std::move(loosest_first)),
          [field](const Policy& p) { return p.*field; }};
}

Key trusted_key(std::string name, std::string help, std::string Policy::*field,
                std::function<std::optional<std::string>(const std::string&)> check = {}) {
  return {{name, help, Policy{}.*field, false},
          trusted_string(field, std::move(check)),
          [field](const Policy& p) { return p.*field; }};
}

Key pattern_list_key(std::string name, std::string help, std::vector<std::string> Policy::*field,
                     bool workspace_may_add) {
  return {{name, help, "", workspace_may_add},
          [field, workspace_may_add](Policy& p, const std::string& v,
                                     bool tighten) -> std::optional<std::string> {
            if (tighten && !workspace_may_add) {
              return "may not be set in a workspace file (it would let new names in)";
            }
            auto patterns = split_words(v);
            if (!workspace_may_add) {
              if (auto error = safe_env_patterns(patterns)) {
                return error;
              }
            }
            (p.*field).insert((p.*field).end(), patterns.begin(), patterns.end());
            return std::nullopt;
          },
          [field](const Policy& p) { return join(p.*field, " "); }};
}

// sandbox.hide and sandbox.unhide: globs relative to the workspace; a workspace may only add.
Key glob_list_key(std::string name, std::string help, std::vector<std::string> Policy::*field,
                  bool workspace_may_add) {
  return {{name, help, "", workspace_may_add},
          [field, workspace_may_add](Policy& p, const std::string& v,
                                     bool tighten) -> std::optional<std::string> {
            if (tighten && !workspace_may_add) {
              return "may not be set in a workspace file (it would show hidden files)";
            }
            auto globs = split_words(v);
            for (const auto& glob : globs) {
              if (auto problem = invalid_hide_glob(glob); !problem.empty()) {
                return quoted(glob) + ": " + problem;
              }
            }
            (p.*field).insert((p.*field).end(), globs.begin(), globs.end());
            return std::nullopt;
          },
          [field](const Policy& p) { return join(p.*field, " "); }};
}

const std::vector<Key>& key_table() {
  static const std::vector<Key> table = {
      {{"engine.name",
        "container engine: docker, podman, or auto (docker when its client is on "
        "engine.search_path, else podman)",
        "auto", false},
       trusted_string(&Policy::engine,
                      [](const std::string& v) -> std::optional<std::string> {
                        if (v != "docker" && v != "podman" && v != "auto") {
                          return std::string("expected docker, podman or auto");
                        }
                        return std::nullopt;
                      }),
       [](const Policy& p) { return p.engine; }},
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
                  "directory with ca.pem, cert.pem and key.pem for a tcp:// endpoint",
                  &Policy::tls_cert_path, absolute_or_empty),
      choice_key("sandbox.network", "network of the container: none, or bridge to allow egress",
                 &Policy::network, {"bridge", "none"}),
      choice_key("sandbox.workspace", "workspace mount: ro (read-only) or rw",
                 &Policy::workspace_mode, {"rw", "ro"}),
      byte_size_key("sandbox.memory", "memory limit (swap is not allowed on top)",
                    &Policy::memory_bytes, 6ULL << 20),
      {{"sandbox.cpus", "CPU limit, in cores", "1", true},
       [](Policy& p, const std::string& v, bool tighten) {
         return set_limit(p.cpus, parse_cpus(v), tighten, "a number of cores such as 0.5 or 2");
       },
       [](const Policy& p) {
         std::ostringstream out;
         out << p.cpus;
         return out.str();
       }},
      count_key("sandbox.pids", "maximum number of processes and threads", &Policy::pids, 8, 65536),
      {{"sandbox.timeout", "deadline of a run; the container is killed when it passes", "30s",
        true},
       [](Policy& p, const std::string& v, bool tighten) {
         return set_limit(p.timeout_ms, parse_duration_ms(v), tighten,
                          "a duration such as 30s, 2m or 500ms");
       },
       [](const Policy& p) { return format_duration_ms(p.timeout_ms); }},
      byte_size_key("sandbox.tmp_size", "size of the writable, noexec /tmp", &Policy::tmp_bytes,
                    1ULL << 20),
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
                    &Policy::hide, true),
      glob_list_key("sandbox.unhide", "globs of the built-in or added sandbox.hide list to show",
                    &Policy::unhide, false),
      count_key("sandbox.hide_limit",
                "workspace entries searched for sandbox.hide; past it the run is refused",
                &Policy::hide_limit, 1, 100'000'000),
      {{"sandbox.writable",
        "workspace sub-paths made writable (never .git, .sandshim.conf, agent or hook files)", "",
        false},
       [](Policy& p, const std::string& v, bool tighten) -> std::optional<std::string> {
         if (tighten) {
           return std::string("may not be set in a workspace file (it would allow writes)");
         }
         for (const auto& path : split_words(v)) {
           if (auto problem = invalid_writable_path(path); !problem.empty()) {
             return quoted(path) + ": " + problem;
           }
           p.writable.push_back(path);
         }
         return std::nullopt;
       },
       [](const Policy& p) { return join(p.writable, " "); }},
      choice_key("sandbox.runtime",
                 "OCI runtime: runc, or runsc (gVisor; install/deps.sh --with-gvisor registers it)",
                 &Policy::runtime, {"runc", "runsc"}),
      choice_key("sandbox.cache",
                 "on: the interpreters' caches (pip, npm, pycache, XDG) survive between runs",
                 &Policy::cache, {"on", "off"}),
      byte_size_key("sandbox.cache_size", "the cache is emptied before a run once past this size",
                    &Policy::cache_bytes, 1ULL << 20),
      choice_key("limits.unenforced",
                 "limits the engine cannot enforce (rootless on cgroup v1, a missing "
                 "controller): refuse to run, or accept and record them",
                 &Policy::limits_unenforced, {"accept", "refuse"}),
      pattern_list_key("env.allow", "more variable names or patterns passed into the sandbox",
                       &Policy::env_allow, false),
      pattern_list_key("env.deny", "more variable names or patterns never passed (deny wins)",
                       &Policy::env_deny, true),
      trusted_key("audit.db", "audit database path; empty: $XDG_STATE_HOME/sandshim/audit.db",
                  &Policy::audit_db, absolute_or_empty),
      {{"audit.required", "refuse to run when the audit database is unusable", "true", false},
       [](Policy& p, const std::string& v, bool tighten) -> std::optional<std::string> {
         auto parsed = parse_bool(v);
         if (!parsed) {
           return std::string("expected true or false");
         }
         if (tighten && !*parsed) {
           return loosens("audit.required = false");
         }
         p.audit_required = *parsed;
         return std::nullopt;
       },
       [](const Policy& p) { return std::string(p.audit_required ? "true" : "false"); }},
      {{"audit.tail_bytes", "bytes of stdout and stderr kept in the audit (0: none)", "4k", false},
       [](Policy& p, const std::string& v, bool tighten) -> std::optional<std::string> {
         auto parsed = parse_byte_size(v);
         if (tighten) {
           return std::string("may not be set in a workspace file");
         }
         if (!parsed || *parsed > (1ULL << 20)) {
           return std::string("expected a size from 0 to 1m");
         }
         p.audit_tail_bytes = *parsed;
         return std::nullopt;
       },
       [](const Policy& p) { return format_byte_size(p.audit_tail_bytes); }},
      choice_key("hook.mode", "what agent hooks do: path (shims first on PATH), wrap, or deny",
                 &Policy::hook_mode, {"path", "wrap", "deny"}),
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
      {{"pool.idle_ttl", "how long a warm container may wait unused before it is removed", "10m",
        true},
       [](Policy& p, const std::string& v, bool tighten) {
         return set_limit(p.pool_idle_ttl_ms, parse_duration_ms(v), tighten,
                          "a duration from 1s such as 30s or 10m", int64_t{1000});
       },
       [](const Policy& p) { return format_duration_ms(p.pool_idle_ttl_ms); }},
  };
  return table;
}

const Key* find_key(const std::string& name) {
  for (const auto& key : key_table()) {
    if (key.info.name == name) {
      return &key;
    }
  }
  return nullptr;
}

// `images.NAME = IMAGE`: which image runs a shimmed command. Only trusted layers may set it.
std::optional<std::string> set_image(Policy& p, const std::string& command,
                                     const std::string& value, bool tighten) {
  if (tighten) {
    return "may not be set in a workspace file (it would choose another image)";
  }
  std::string image = trim(value);
  if (command.empty() || command.find('/') != std::string::npos || command == "sandshim") {
    return "expected images.COMMAND with a plain command name";
  }
  if (image.empty()) {
    p.images.erase(command);
    return std::nullopt;
  }
  if (image[0] == '-' || image.find_first_of(" \t\r\n") != std::string::npos) {
    return "expected an image reference such as python:3.12-alpine";
  }
  p.images[command] = image;
  return std::nullopt;
}

std::optional<std::string> apply_one(Policy& policy, const Setting& setting, Trust trust) {
  bool tighten = trust == Trust::tighten_only;
  if (setting.key.starts_with("images.")) {
    return set_image(policy, setting.key.substr(7), setting.value, tighten);
  }
  const Key* key = find_key(setting.key);
  if (key == nullptr) {
    return std::string("unknown key (see `sandshim policy keys`)");
  }
  return key->set(policy, setting.value, tighten);
}

void set_default_images(Policy& policy) {
  policy.images = default_images();
}

// Boost.Program_options reads the syntax; a second pass finds the line of each key, which
// Program_options does not report.
std::vector<std::pair<std::string, int>> key_lines(std::istream& in) {
  std::vector<std::pair<std::string, int>> keys;
  std::string line;
  std::string section;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) {
      continue;
    }
    if (text.front() == '[' && text.back() == ']') {
      section = trim(text.substr(1, text.size() - 2));
      continue;
    }
    std::string name = trim(text.substr(0, text.find('=')));
    keys.emplace_back(section.empty() ? name : section + "." + name, number);
  }
  return keys;
}

std::vector<std::string> config_layers() {
  std::vector<std::string> layers = {"/etc/sandshim/config",
                                     (xdg_directory("config") / "sandshim" / "config").string()};
  if (const char* explicit_file = std::getenv("SANDSHIM_CONFIG");
      explicit_file != nullptr && explicit_file[0] != '\0') {
    layers.emplace_back(explicit_file);
  }
  return layers;
}

void apply_layer(Policy& policy, const std::filesystem::path& file, Trust trust, bool required) {
  std::error_code ec;
  if (!required && !std::filesystem::exists(file, ec)) {
    return;
  }
  apply_settings(policy, read_config_file(file), trust);
  policy.sources.push_back(file.string());
}

}  // namespace

std::map<std::string, std::string> default_images() {
  return {{"python", "sandshim/python:bookworm"},
          {"python3", "sandshim/python:bookworm"},
          {"node", "sandshim/node:bookworm"},
          {"sh", "sandshim/sh:bookworm"}};
}

std::vector<Setting> read_config_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw Fatal("cannot read config file " + quoted(path.string()) + ": " + std::strerror(errno) +
                "; fix its permissions or remove it");
  }
  std::stringstream content;
  content << in.rdbuf();
  return parse_config_text(content.str(), path.string());
}

std::vector<Setting> parse_config_text(const std::string& text, const std::string& source) {
  po::parsed_options parsed(nullptr);
  try {
    std::istringstream syntax(text);
    parsed = po::parse_config_file(syntax, po::options_description(), true);
  } catch (const po::error& e) {
    throw Fatal("config file " + quoted(source) + ": " + e.what());
  }
  std::istringstream lines_in(text);
  auto lines = key_lines(lines_in);
  std::vector<Setting> settings;
  size_t next_line = 0;
  for (const auto& option : parsed.options) {
    int line = 0;
    while (next_line < lines.size() && lines[next_line].first != option.string_key) {
      ++next_line;
    }
    if (next_line < lines.size()) {
      line = lines[next_line++].second;
    }
    std::string value = option.value.empty() ? "" : option.value.front();
    settings.push_back({option.string_key, value, Origin{source, line}});
  }
  return settings;
}

void apply_settings(Policy& policy, const std::vector<Setting>& settings, Trust trust) {
  std::vector<std::string> problems;
  for (const auto& setting : settings) {
    if (auto problem = apply_one(policy, setting, trust)) {
      problems.push_back(setting.origin.describe() + ": " + setting.key + " = " +
                         quoted(setting.value) + ": " + *problem);
    } else {
      policy.origins[setting.key] = setting.origin;
    }
  }
  if (!problems.empty()) {
    throw Fatal("invalid policy: " + join(problems, "; "));
  }
}

Policy load_policy(const PolicyInputs& inputs) {
  Policy policy;
  set_default_images(policy);
  auto layers = config_layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    bool named_by_env = i == 2;  // $SANDSHIM_CONFIG names a file that must exist
    apply_layer(policy, layers[i], Trust::full, named_by_env);
  }
  if (!inputs.workspace.empty()) {
    apply_layer(policy, inputs.workspace / ".sandshim.conf", Trust::tighten_only, false);
  }
  apply_settings(policy, inputs.command_line, Trust::full);
  return policy;
}

const std::vector<KeyInfo>& policy_keys() {
  static const std::vector<KeyInfo> infos = [] {
    std::vector<KeyInfo> result;
    for (const auto& key : key_table()) {
      result.push_back(key.info);
    }
    result.push_back({"images.COMMAND", "image that runs COMMAND (python, python3, node, sh, ...)",
                      "sandshim/<name>:bookworm", false});
    return result;
  }();
  return infos;
}

std::string render_value(const Policy& policy, const std::string& key) {
  if (key.starts_with("images.")) {
    auto it = policy.images.find(key.substr(7));
    return it == policy.images.end() ? "" : it->second;
  }
  const Key* found = find_key(key);
  return found == nullptr ? "" : found->render(policy);
}

std::string Policy::digest() const {
  std::string canonical;
  for (const auto& key : key_table()) {
    canonical += key.info.name + "=" + key.render(*this) + "\n";
  }
  for (const auto& [command, image] : images) {
    canonical += "images." + command + "=" + image + "\n";
  }
  return sha256_hex(canonical);
}

std::string Policy::limits_summary() const {
  std::ostringstream out;
  out << "memory=" << format_byte_size(memory_bytes) << " cpus=" << cpus << " pids=" << pids
      << " timeout=" << format_duration_ms(timeout_ms) << " tmp=" << format_byte_size(tmp_bytes)
      << " network=" << network << " workspace=" << workspace_mode;
  return out.str();
}

std::filesystem::path Policy::effective_shim_dir() const {
  return shim_dir.empty() ? xdg_directory("data") / "sandshim" / "bin"
                          : std::filesystem::path(shim_dir);
}

std::filesystem::path Policy::effective_audit_db() const {
  return audit::resolve_audit_db(audit_db);
}

}  // namespace sandshim::shim
