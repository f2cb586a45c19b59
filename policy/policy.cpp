#include "policy/policy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "audit/environment.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/glob.hpp"
#include "common/io.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "policy/key_table.hpp"

namespace sandshim::shim {

namespace po = boost::program_options;

std::string Origin::describe() const {
  return line > 0 ? source + ":" + std::to_string(line) : source;
}

namespace {

// --- trust: the one place that decides what a layer may do with a key ---

bool is_pinned(const Policy& policy, const std::string& name) {
  return std::any_of(policy.user_pins.begin(), policy.user_pins.end(),
                     [&](const std::string& pattern) { return glob_match(pattern, name); });
}

std::string change(const Key& key, std::string_view subkey, const Policy& from, const Policy& to) {
  return key.render(from, subkey) + " -> " + key.render(to, subkey);
}

std::optional<std::string> check_workspace(const Key& key, std::string_view subkey,
                                           const Policy& current, const Policy& candidate) {
  if (!key.looser) {
    return std::string("may not be set in a workspace file (") + describe_trust(key.info.trust) +
           ")";
  }
  if (key.looser(current, candidate, subkey)) {
    return "would loosen the policy (" + change(key, subkey, current, candidate) +
           "); a workspace file may only tighten it";
  }
  return std::nullopt;
}

// Why the system file's value holds: the broker's policy, or a key users.pin names.
std::string floor_reason(PolicyMode mode) {
  return mode == PolicyMode::broker
             ? "the broker's policy comes from " + std::string(k_system_config)
             : std::string(k_system_config) + " pins it (users.pin)";
}

// A looser value than the floor passes only up to the ceiling users.may_set gives its key.
std::optional<std::string> check_ceiling(const Key& key, const std::string& name,
                                         std::string_view subkey, const Policy& current,
                                         const Policy& candidate, const std::string& floor) {
  auto ceiling = current.user_ceilings.find(name);
  if (ceiling == current.user_ceilings.end() || key.info.trust != KeyTrust::tighten) {
    return "would loosen the system policy (" + change(key, subkey, current, candidate) +
           "); a user may only tighten it: " + floor;
  }
  Policy limit = current;
  (void)key.set(limit, subkey, ceiling->second);
  if (key.looser(limit, candidate, subkey)) {
    return "would loosen the system policy beyond its ceiling (" +
           change(key, subkey, current, candidate) + ", users.may_set allows up to " +
           ceiling->second + ")";
  }
  return std::nullopt;
}

// A user file or flag against the system file's floor (broker mode, or a pinned key).
std::optional<std::string> check_floor(const Key& key, const std::string& name,
                                       std::string_view subkey, const Policy& current,
                                       const Policy& candidate, PolicyMode mode) {
  std::string floor = floor_reason(mode);
  if (!key.looser) {
    // images.COMMAND (the one key with a subkey) naming the floor's own image changes nothing:
    // wrap mode's `--image` of the image the system file gives the command.
    if (!subkey.empty() && key.render(current, subkey) == key.render(candidate, subkey)) {
      return std::nullopt;
    }
    return "may be set only in the system file: " + floor;
  }
  if (!key.looser(current, candidate, subkey)) {
    return std::nullopt;
  }
  return check_ceiling(key, name, subkey, current, candidate, floor);
}

std::optional<std::string> check_trust(const Key& key, const std::string& name,
                                       std::string_view subkey, LayerTrust where,
                                       const Policy& current, const Policy& candidate) {
  if (where.layer == Layer::system) {
    return std::nullopt;
  }
  if (key.info.trust == KeyTrust::system_only) {
    return "may be set only in the system file (" + std::string(k_system_config) + ")";
  }
  if (where.layer == Layer::workspace) {
    return check_workspace(key, subkey, current, candidate);
  }
  if (where.mode == PolicyMode::direct && !is_pinned(current, name)) {
    return std::nullopt;
  }
  return check_floor(key, name, subkey, current, candidate, where.mode);
}

std::optional<PolicyProblem> apply_one(Policy& policy, const Setting& setting, LayerTrust where) {
  auto problem = [&](std::string reason, bool loosens) {
    return PolicyProblem{setting.key, setting.value, setting.origin, std::move(reason), loosens};
  };
  auto [key, subkey] = find_key(setting.key);
  if (key == nullptr) {
    return problem("unknown key (see `sandshim policy keys`)", false);
  }
  Policy candidate = policy;
  if (auto error = key->set(candidate, subkey, setting.value)) {
    return problem(*error, false);
  }
  if (auto refusal = check_trust(*key, setting.key, subkey, where, policy, candidate)) {
    return problem(*refusal, true);
  }
  policy = std::move(candidate);
  return std::nullopt;
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

void apply_layer(Policy& policy, const std::filesystem::path& file, LayerTrust trust,
                 bool required) {
  std::error_code ec;
  if (!required && !std::filesystem::exists(file, ec)) {
    return;
  }
  apply_settings(policy, read_config_file(file), trust);
  policy.sources.push_back(file.string());
}

[[noreturn]] void untrusted_system_file(const std::filesystem::path& path, const std::string& why) {
  throw Fatal("system config " + quoted(path.string()) + " is not trusted: " + why +
              "; fix: sudo chown root:root " + path.string() + " " + path.parent_path().string() +
              " && sudo chmod go-w " + path.string() + " " + path.parent_path().string());
}

void require_admin_owned(const std::filesystem::path& shown, const struct stat& st,
                         const std::filesystem::path& file) {
  if (st.st_uid != 0) {
    untrusted_system_file(file, quoted(shown.string()) + " is owned by uid " +
                                    std::to_string(st.st_uid) + ", not root");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    untrusted_system_file(file, quoted(shown.string()) + " is writable by its group or others");
  }
}

std::string read_all(int fd) {
  std::optional<std::string> text = read_to_end(fd);
  if (!text) {
    throw Fatal("cannot read the system config: " + std::string(std::strerror(errno)));
  }
  return *text;
}

// The system file's text, read from the descriptor whose owner and mode were checked.
std::optional<std::string> read_system_text(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid() && errno == ENOENT) {
    return std::nullopt;
  }
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    untrusted_system_file(path, "cannot read it as a file: " + std::string(std::strerror(errno)));
  }
  std::filesystem::path real =
      std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd.get()));
  struct stat dir {};
  if (::stat(real.parent_path().c_str(), &dir) != 0) {
    untrusted_system_file(path, "cannot stat its directory: " + std::string(std::strerror(errno)));
  }
  require_admin_owned(real, st, path);
  require_admin_owned(real.parent_path(), dir, path);
  return read_all(fd.get());
}

}  // namespace

bool workspace_may_tighten(KeyTrust trust) {
  return trust == KeyTrust::tighten || trust == KeyTrust::tighten_pinned;
}

std::string describe_trust(KeyTrust trust) {
  switch (trust) {
    case KeyTrust::tighten:
      return "lower layers may tighten it; users.may_set may open it to a ceiling";
    case KeyTrust::tighten_pinned:
      return "lower layers may only tighten it; never opened to users";
    case KeyTrust::trusted:
      return "never in a workspace file; only the system file in broker mode";
    case KeyTrust::system_only:
      return "only in the system file";
  }
  return "";
}

std::string PolicyProblem::line() const {
  bool plain_key = key.size() <= 64 && quoted(key) == "\"" + key + "\"";
  return origin.describe() + ": " + (plain_key ? key : excerpt(key)) + " = " + excerpt(value) +
         ": " + reason;
}

namespace {

std::string problems_text(const std::vector<PolicyProblem>& problems) {
  constexpr size_t k_shown = 8;  // a file of garbage is not echoed whole
  std::vector<std::string> lines;
  for (size_t i = 0; i < problems.size() && i < k_shown; ++i) {
    lines.push_back(problems[i].line());
  }
  if (problems.size() > k_shown) {
    lines.push_back("and " + std::to_string(problems.size() - k_shown) + " more");
  }
  bool refused = std::any_of(problems.begin(), problems.end(),
                             [](const PolicyProblem& p) { return p.loosens; });
  return std::string(refused ? "policy refused: " : "invalid policy: ") + join(lines, "; ");
}

}  // namespace

PolicyError::PolicyError(std::vector<PolicyProblem> problems)
    : Fatal(problems_text(problems)), m_problems(std::move(problems)) {}

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
  } catch (const po::invalid_config_file_syntax& e) {
    // Not e.what(): Boost substitutes the line into its message in a loop that never ends when the
    // line itself contains "%invalid_line%" (found by fuzz_policy).
    throw Fatal("config file " + quoted(source) + ": the line " + excerpt(e.tokens()) +
                " is neither `key = value` nor `[section]`");
  } catch (const po::error& e) {
    throw Fatal("config file " + quoted(source) + ": " + excerpt(e.what(), 160));
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

namespace {

// Repeated engine.endpoints lines of one layer are one list, so each engine can have a line of
// its own: the first line's setting carries them all (a later layer's list replaces it).
std::vector<Setting> join_endpoint_lines(const std::vector<Setting>& settings) {
  std::vector<Setting> joined;
  std::optional<size_t> first;
  for (const auto& setting : settings) {
    if (setting.key != "engine.endpoints") {
      joined.push_back(setting);
    } else if (!first) {
      first = joined.size();
      joined.push_back(setting);
    } else {
      joined[*first].value += ", " + setting.value;
    }
  }
  return joined;
}

}  // namespace

void apply_settings(Policy& policy, const std::vector<Setting>& settings, LayerTrust trust) {
  std::vector<PolicyProblem> problems;
  for (const auto& setting : join_endpoint_lines(settings)) {
    if (auto problem = apply_one(policy, setting, trust)) {
      problems.push_back(*problem);
    } else {
      policy.origins[setting.key] = setting.origin;
    }
  }
  if (!problems.empty()) {
    throw PolicyError(std::move(problems));
  }
}

void apply_settings(Policy& policy, const std::vector<Setting>& settings, Trust trust) {
  apply_settings(policy, settings,
                 LayerTrust{trust == Trust::full ? Layer::system : Layer::workspace});
}

std::vector<ConfigFile> user_config_files() {
  std::vector<ConfigFile> files = {{xdg_directory("config") / "sandshim" / "config", false}};
  if (auto explicit_file = environment::config_file()) {
    files.push_back({*explicit_file, true});
  }
  return files;
}

bool check_system_file(const std::filesystem::path& path) {
  return read_system_text(path).has_value();
}

// The workspace files that apply, outermost first: every `.sandshim.conf` from the outermost
// enclosing git repository down to the workspace, so a nested repository (a submodule, a vendored
// checkout) cannot drop its parent's stricter file. Each may only tighten, so all of them hold.
std::vector<std::filesystem::path> workspace_files(const std::filesystem::path& workspace) {
  std::vector<std::filesystem::path> dirs{workspace};
  for (auto root = find_git_root(workspace.parent_path());
       root && dirs.back() != dirs.back().root_path(); root = find_git_root(root->parent_path())) {
    for (auto dir = dirs.back().parent_path(); dirs.back() != *root; dir = dir.parent_path()) {
      dirs.push_back(dir);
    }
    if (*root == root->root_path()) {
      break;
    }
  }
  std::vector<std::filesystem::path> files;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    files.push_back(*it / ".sandshim.conf");
  }
  return files;
}

namespace {

// A system file that keys its audit names the broker's: direct mode keeps its own database
// (its rows would otherwise be unkeyed links in the broker's chain, written by whoever runs).
void set_aside_broker_audit(Policy& policy) {
  if (policy.audit_key_file.empty()) {
    return;
  }
  Policy defaults;
  policy.broker_audit_db = policy.audit_db;
  policy.audit_db = defaults.audit_db;
  policy.audit_key_file = defaults.audit_key_file;
  policy.audit_anchor_file = defaults.audit_anchor_file;
}

}  // namespace

Policy load_policy(const PolicyInputs& inputs) {
  Policy policy;
  set_default_images(policy);
  if (auto text = read_system_text(inputs.system_file)) {
    apply_settings(policy, parse_config_text(*text, inputs.system_file.string()),
                   LayerTrust{Layer::system, inputs.mode});
    policy.sources.push_back(inputs.system_file.string());
  }
  if (inputs.mode == PolicyMode::direct) {
    set_aside_broker_audit(policy);
  }
  for (const auto& file : inputs.user_files.value_or(user_config_files())) {
    apply_layer(policy, file.path, {Layer::user, inputs.mode}, file.required);
  }
  for (const auto& [source, text] : inputs.user_texts) {
    apply_settings(policy, parse_config_text(text, source), {Layer::user, inputs.mode});
    policy.sources.push_back(source);
  }
  if (!inputs.workspace.empty() && inputs.mode == PolicyMode::direct) {
    for (const auto& file : workspace_files(inputs.workspace)) {
      apply_layer(policy, file, {Layer::workspace, inputs.mode}, false);
    }
  }
  for (const auto& [source, text] : inputs.workspace_texts) {
    apply_settings(policy, parse_config_text(text, source), {Layer::workspace, inputs.mode});
    policy.sources.push_back(source);
  }
  apply_settings(policy, inputs.command_line, {Layer::command_line, inputs.mode});
  return policy;
}

const std::vector<KeyInfo>& policy_keys() {
  static const std::vector<KeyInfo> infos = [] {
    std::vector<KeyInfo> result;
    for (const auto& key : key_table()) {
      result.push_back(key.info);
    }
    return result;
  }();
  return infos;
}

std::string format_policy_keys() {
  std::string text;
  for (const auto& key : policy_keys()) {
    text += key.name + " (default: " + (key.default_value.empty() ? "-" : key.default_value) +
            "; " + describe_trust(key.trust) + ")\n    " + key.help + "\n";
  }
  return text;
}

WorkspaceMode workspace_for_run(WorkspaceMode configured, bool wrap_shell) {
  if (configured != WorkspaceMode::wrap) {
    return configured;
  }
  return wrap_shell ? WorkspaceMode::rw : WorkspaceMode::ro;
}

std::string render_value(const Policy& policy, const std::string& key) {
  auto [found, subkey] = find_key(key);
  return found == nullptr ? "" : found->render(policy, subkey);
}

std::string Policy::digest() const {
  std::string canonical;
  for (const auto& key : key_table()) {
    if (key.info.name != "images.COMMAND") {
      canonical += key.info.name + "=" + key.render(*this, "") + "\n";
    }
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
      << " network=" << to_string(network) << " workspace=" << to_string(workspace_mode);
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
