#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandshim::shim {

// Where a value came from, for error messages and `sandshim policy show`.
struct Origin {
  std::string source = "default";  // "default", a file path, "environment", "command line"
  int line = 0;
  std::string describe() const;
};

// The effective policy of one run: built-in defaults, then each config layer, then the command
// line. The engine code reads only this.
struct Policy {
  // [engine]
  std::string engine = "auto";  // docker | podman | auto
  std::string engine_path;      // absolute path; empty: search engine_search_path
  std::string engine_search_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::string endpoint;       // empty: the engine's local socket
  std::string tls_cert_path;  // directory with ca.pem, cert.pem, key.pem for tcp:// endpoints

  // [sandbox]
  std::string network = "none";       // none | bridge
  std::string workspace_mode = "ro";  // ro | rw
  uint64_t memory_bytes = 512ULL << 20;
  double cpus = 1.0;
  int64_t pids = 64;
  int64_t timeout_ms = 30'000;
  uint64_t tmp_bytes = 64ULL << 20;
  uint64_t shm_bytes = 16ULL << 20;
  int64_t nofile = 1024;
  int64_t nproc = 1024;
  std::string user = "auto";  // auto: the caller's uid:gid, 65534:65534 for root
  std::string hostname = "sandbox";
  std::vector<std::string> hide;      // globs masked on top of the built-in list (any layer)
  std::vector<std::string> unhide;    // built-in or added globs taken back (trusted layers only)
  int64_t hide_limit = 200'000;       // workspace entries searched for them before refusing
  std::vector<std::string> writable;  // workspace sub-paths mounted read-write (trusted only)
  std::string cache = "off";          // on: a per-workspace, per-user cache directory
  std::string runtime = "runc";       // runc | runsc (gVisor: a kernel of its own)
  uint64_t cache_bytes = 1ULL << 30;  // emptied before a run when it has grown past this

  // [limits]
  std::string limits_unenforced = "refuse";  // accept | refuse: limits the engine cannot enforce

  // [env]
  std::vector<std::string> env_allow;  // patterns added to the built-in allowlist
  std::vector<std::string> env_deny;   // patterns added to the built-in denylist

  // [images]: command name -> image
  std::map<std::string, std::string> images;

  // [audit]
  std::string audit_db;  // empty: $XDG_STATE_HOME/sandshim/audit.db
  bool audit_required = true;
  uint64_t audit_tail_bytes = 4096;

  // [hook]
  std::string hook_mode = "path";  // path | wrap | deny

  // [shim]
  std::string shim_dir;  // empty: $XDG_DATA_HOME/sandshim/bin

  // [broker]: read by the thin clients from /etc/sandshim/config only (broker/settings.cpp)
  std::string broker_mode = "auto";  // auto | required | off
  std::string broker_socket;         // empty: /run/sandshim/broker.sock

  // [pool]: warm mode, containers started in advance (0: off)
  int64_t pool_size = 0;
  int64_t pool_idle_ttl_ms = 600'000;

  std::map<std::string, Origin> origins;  // key -> where its value was set
  std::vector<std::string> sources;       // files read, in order

  // A stable hash of every effective value: two runs under the same policy share it.
  std::string digest() const;
  // "memory=512m cpus=1 pids=64 timeout=30s network=none workspace=ro"
  std::string limits_summary() const;
  std::filesystem::path effective_shim_dir() const;
  std::filesystem::path effective_audit_db() const;
};

// One `key = value` setting and where it was written.
struct Setting {
  std::string key;  // "sandbox.memory"
  std::string value;
  Origin origin;
};

// How much a layer is trusted: a workspace file comes with untrusted repositories.
enum class Trust { full, tighten_only };

// Applies settings in order; collects every problem and throws one Fatal listing them all.
void apply_settings(Policy& policy, const std::vector<Setting>& settings, Trust trust);

// Reads an INI file (Boost.Program_options syntax) into settings with their line numbers.
std::vector<Setting> read_config_file(const std::filesystem::path& path);
// The same from the file's text; `source` names it in origins and errors (and lets the fuzzer in).
std::vector<Setting> parse_config_text(const std::string& text, const std::string& source);

struct PolicyInputs {
  std::filesystem::path workspace;  // where to look for .sandshim.conf; empty: none
  std::vector<Setting> command_line;
};

// The layered policy: defaults < /etc/sandshim/config < ~/.config/sandshim/config <
// $SANDSHIM_CONFIG < workspace .sandshim.conf (tighten only) < command line.
Policy load_policy(const PolicyInputs& inputs);

// The key table, for docs and `policy show`: name, help, and whether a workspace may set it.
struct KeyInfo {
  std::string name;
  std::string help;
  std::string default_value;
  bool workspace_may_tighten;
};
const std::vector<KeyInfo>& policy_keys();

// The built-in command -> image map (images.COMMAND before any config file).
std::map<std::string, std::string> default_images();

// The value of a key in the policy, rendered as it would be written in a config file.
std::string render_value(const Policy& policy, const std::string& key);

}  // namespace sandshim::shim
