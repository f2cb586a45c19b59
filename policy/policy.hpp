#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace sandshim::shim {

// The choice keys' values, loosest first: a later value is stricter.
enum class Network { bridge, allowlist, none };
// wrap: read-write for an agent's whole shell command (`sandshim -c`, wrap mode), read-only for
// every other run; a run sees only rw or ro (workspace_for_run).
enum class WorkspaceMode { rw, wrap, ro };
enum class Unenforced { accept, refuse };  // limits the engine cannot enforce
enum class HookMode { path, wrap, deny };
// How a warm run starts its command: through sandshim's launcher in the container, or `exec`.
enum class PoolStart { launcher, exec };
enum class Runtime { runc, runsc };  // runsc: gVisor, a kernel of its own
enum class Cache { on, off };        // on: caches survive between runs
enum class EngineApi { off, on };    // on: docker's cold run through its Engine API
// A project asking for an interpreter version its image lacks: run the host's, say so, or not.
enum class VersionFit { host, warn, off };

// The words config files use for them.
std::string to_string(Network value);
std::string to_string(WorkspaceMode value);
std::string to_string(Unenforced value);
std::string to_string(HookMode value);
std::string to_string(Runtime value);
std::string to_string(Cache value);
std::optional<HookMode> hook_mode_from(std::string_view word);

// Where a value came from, for error messages and `sandshim policy show`.
struct Origin {
  std::string source = "default";  // "default", a file path, "environment", "command line"
  int line = 0;
  std::string describe() const;
};

// One engine of engine.endpoints: its endpoint and the settings its entry carries.
struct PoolEngine {
  std::string endpoint;
  std::string tls_cert_path;        // tls_cert_path=DIR; empty: engine.tls_cert_path
  std::optional<int64_t> max_runs;  // max_runs=N; nullopt: engine.max_runs
  std::vector<std::string> labels;  // label=NAME each; engine.require_labels picks by them
  std::string engine = {};          // engine=docker|podman; empty: engine.name

  std::string ssh_identity = {};     // ssh_identity=FILE; empty: engine.ssh_identity
  std::string ssh_known_hosts = {};  // ssh_known_hosts=FILE; empty: engine.ssh_known_hosts

  bool operator==(const PoolEngine&) const = default;
};

// The effective policy of one run: built-in defaults, then each config layer, then the command
// line. The engine code reads only this.
// Where the broker listens unless broker.socket says otherwise.
inline constexpr const char* k_default_broker_socket = "/run/sandshim/broker.sock";

struct Policy {
  // [engine]
  std::string engine = "auto";  // docker | podman | auto
  std::string engine_path;      // absolute path; empty: search engine_search_path
  std::string engine_search_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::string endpoint;       // empty: the engine's local socket
  std::string tls_cert_path;  // directory with ca.pem, cert.pem, key.pem for tcp:// endpoints

  std::string ssh_identity;     // ssh://: the private key; empty: ssh's default keys
  std::string ssh_known_hosts;  // ssh://: the host keys; empty: ~/.ssh/known_hosts
  // engine.endpoints: the engines a run is placed on (least loaded, healthy); empty: endpoint
  std::vector<PoolEngine> endpoints;
  std::vector<std::string> require_labels;  // a run goes only to engines carrying all of them
  int64_t engine_max_runs = 0;              // runs in flight from this machine per engine; 0: any
  int64_t engine_place_wait_ms = 30'000;    // how long a run waits for a free engine
  EngineApi engine_api = EngineApi::on;     // docker's cold run: the API, or the client

  // [sandbox]
  Network network = Network::none;
  // allowlist: the names (and NAME:PORT) the egress proxy lets through, as written back
  std::vector<std::string> network_allow;
  std::map<std::string, std::string> network_resolve;  // trusted name -> address mappings
  // wrap in direct mode; a broker's built-in default is ro (docs/modes.md: rw through a broker
  // binds names inside the caller's directory).
  WorkspaceMode workspace_mode = WorkspaceMode::wrap;
  uint64_t memory_bytes = 512ULL << 20;
  double cpus = 1.0;
  int64_t pids = 64;
  int64_t timeout_ms = 30'000;
  uint64_t tmp_bytes = 64ULL << 20;
  bool tmp_exec = false;  // /tmp allows exec (trusted layers only)
  uint64_t shm_bytes = 16ULL << 20;
  int64_t nofile = 1024;
  int64_t nproc = 1024;
  std::string user = "auto";  // auto: the caller's uid:gid, 65534:65534 for root
  std::string hostname = "sandbox";
  std::vector<std::string> hide;      // globs masked on top of the built-in list (any layer)
  std::vector<std::string> unhide;    // built-in or added globs taken back (trusted layers only)
  int64_t hide_limit = 200'000;       // workspace entries searched for them before refusing
  std::vector<std::string> writable;  // workspace sub-paths mounted read-write (trusted only)
  Cache cache = Cache::off;           // on: a per-workspace, per-user cache directory
  Runtime runtime = Runtime::runc;    // runsc: gVisor, which install/deps.sh --with-gvisor adds
  uint64_t cache_bytes = 1ULL << 30;  // emptied before a run when it has grown past this
  VersionFit version_fit = VersionFit::host;  // package.json's engines.node, .nvmrc vs the image

  // [limits]
  Unenforced limits_unenforced = Unenforced::refuse;

  // [env]
  std::vector<std::string> env_allow;  // patterns added to the built-in allowlist
  std::vector<std::string> env_deny;   // patterns added to the built-in denylist

  // [images]: command name -> image
  std::map<std::string, std::string> images;

  // [audit]
  std::string audit_db;  // empty: $XDG_STATE_HOME/sandshim/audit.db
  bool audit_required = true;
  uint64_t audit_tail_bytes = 4096;
  std::string audit_key_file;     // HMAC key of the chain (broker); empty: an unkeyed chain
  std::string audit_anchor_file;  // root-owned append-only log of chain heads; empty: none
  // Direct mode only: the broker's database, named by a system file that keys its audit; never
  // written in direct mode (not a key: derived when the policy loads).
  std::string broker_audit_db;

  // [hook]
  HookMode hook_mode = HookMode::path;

  // [shim]
  std::string shim_dir;  // empty: $XDG_DATA_HOME/sandshim/bin

  // [broker]: read by the thin clients from /etc/sandshim/config only (broker/settings.cpp)
  std::string broker_mode = "auto";  // auto | required | off
  std::string broker_socket;         // empty: k_default_broker_socket

  // [pool]: warm mode, containers started in advance (0: off)
  int64_t pool_size = 0;
  int64_t pool_idle_ttl_ms = 600'000;
  PoolStart pool_start = PoolStart::launcher;
  int64_t pool_max = 4;                   // the cap a key's target grows to under demand
  int64_t pool_shrink_after_ms = 60'000;  // no draw for this long: the target is pool_size again
  int64_t pool_claim_wait_ms = 2'000;     // an empty pool: how long a run waits for a start

  // [users]: only in /etc/sandshim/config
  std::vector<std::string> user_pins;  // keys the user layers may only tighten (direct mode)
  std::map<std::string, std::string> user_ceilings;  // key -> loosest value a user may set

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

// Where a layer of settings comes from, most trusted first.
enum class Layer { system, user, workspace, command_line };

// Direct mode: the caller's own files are trusted (except keys the system file pins). Broker
// mode: the system file is the floor; user, workspace and flag layers may only tighten it,
// except keys the system file opens to users up to a ceiling (users.may_set).
enum class PolicyMode { direct, broker };

// How far a key's value may be moved by a layer below the system file. Carried in the key table
// and checked in one place (apply_settings).
enum class KeyTrust {
  tighten,         // a limit: lower layers may tighten it; users.may_set may open it to a ceiling
  tighten_pinned,  // a floor that is never opened: lower layers may only tighten it
  trusted,         // chooses what runs or where records go: never a workspace file; in broker
                   // mode (or pinned) only the system file
  system_only,     // a setting of the system file itself (users.*)
};

// Whether a workspace file may set the key at all (a no-op counts) and what the trust means.
bool workspace_may_tighten(KeyTrust trust);
std::string describe_trust(KeyTrust trust);

// The layer being applied and the mode of the load.
struct LayerTrust {
  Layer layer = Layer::user;
  PolicyMode mode = PolicyMode::direct;
};

// Older callers' names: `full` is a user layer in direct mode, `tighten_only` a workspace file.
enum class Trust { full, tighten_only };

// One refused or invalid setting, for the one-line error and the broker's audit of a refusal.
struct PolicyProblem {
  std::string key;
  std::string value;
  Origin origin;
  std::string reason;
  bool loosens = false;  // refused by trust (a floor, a workspace), not a bad value
  std::string line() const;
};

// The Fatal every invalid layer throws (exit 125): all its problems in one line.
class PolicyError : public Fatal {
 public:
  explicit PolicyError(std::vector<PolicyProblem> problems);
  const std::vector<PolicyProblem>& problems() const { return m_problems; }

 private:
  std::vector<PolicyProblem> m_problems;
};

// Applies settings in order; collects every problem and throws one PolicyError listing them all.
void apply_settings(Policy& policy, const std::vector<Setting>& settings, LayerTrust trust);
void apply_settings(Policy& policy, const std::vector<Setting>& settings, Trust trust);

// Reads an INI file (Boost.Program_options syntax) into settings with their line numbers.
std::vector<Setting> read_config_file(const std::filesystem::path& path);
// The same from the file's text; `source` names it in origins and errors (and lets the fuzzer in).
std::vector<Setting> parse_config_text(const std::string& text, const std::string& source);

inline constexpr const char* k_system_config = "/etc/sandshim/config";

// A user layer: a file, and whether it must exist ($SANDSHIM_CONFIG names one that must).
struct ConfigFile {
  std::filesystem::path path;
  bool required = false;
};

// The user layers as this process's environment names them: ~/.config/sandshim/config
// ($XDG_CONFIG_HOME), then $SANDSHIM_CONFIG.
std::vector<ConfigFile> user_config_files();

struct PolicyInputs {
  // Direct mode, this process's user files: what the shim, the hooks and the CLI load.
  PolicyInputs(std::filesystem::path workspace_dir = {}, std::vector<Setting> flags = {})
      : workspace(std::move(workspace_dir)), command_line(std::move(flags)) {}

  std::filesystem::path workspace;  // where to look for .sandshim.conf; empty: none
  std::vector<Setting> command_line;
  PolicyMode mode = PolicyMode::direct;
  std::filesystem::path system_file = k_system_config;  // tests point it elsewhere
  // The caller's user layers; nullopt: user_config_files() of this process. The broker passes
  // the caller's (it must not read its own environment for them).
  std::optional<std::vector<ConfigFile>> user_files;
  // More user layers as text (source name, content), after user_files: what a broker's client
  // sent of files the broker's user cannot open itself.
  std::vector<std::pair<std::string, std::string>> user_texts = {};
  // The workspace's .sandshim.conf files as text (source name, content), outermost first: what a
  // broker's worker read through the caller's cwd descriptor. Broker mode never opens workspace
  // files by name; without these it has none.
  std::vector<std::pair<std::string, std::string>> workspace_texts = {};
};

// The layered policy: defaults < system file < user files < workspace .sandshim.conf (tighten
// only) < command line. The system file is read only when it is root-owned and neither it nor
// its directory is group- or other-writable; anything else is refused with one line.
Policy load_policy(const PolicyInputs& inputs);

// Throws unless `path` is a file an administrator controls (root-owned, not group/other
// writable, in a directory that is neither); false when it does not exist.
bool check_system_file(const std::filesystem::path& path);

// The key table, for docs and `policy show`: name, help, default and how far lower layers may
// move it.
struct KeyInfo {
  std::string name;
  std::string help;
  std::string default_value;
  KeyTrust trust;
};
const std::vector<KeyInfo>& policy_keys();

// `sandshim policy keys`: every key with its default, its trust and its help.
std::string format_policy_keys();

// The built-in command -> image map (images.COMMAND before any config file).
std::map<std::string, std::string> default_images();

// The workspace mount a run gets: `wrap` is rw for an agent's whole shell command (what
// `sandshim -c` starts) and ro for everything else.
WorkspaceMode workspace_for_run(WorkspaceMode configured, bool wrap_shell);

// The value of a key in the policy, rendered as it would be written in a config file.
std::string render_value(const Policy& policy, const std::string& key);

}  // namespace sandshim::shim
