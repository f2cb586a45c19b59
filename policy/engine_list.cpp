#include "policy/engine_list.hpp"

#include <algorithm>

#include "common/strings.hpp"
#include "policy/key_table.hpp"

namespace sandshim::shim {

namespace {

constexpr int64_t k_max_runs_ceiling = 4096;
constexpr size_t k_label_bytes = 63;

std::optional<std::string> valid_label(const std::string& label) {
  if (label.empty() || label.size() > k_label_bytes ||
      label.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos ||
      label.find_first_of("abcdefghijklmnopqrstuvwxyz0123456789") != 0) {
    return std::string(
        "expected a label of lowercase letters, digits, '.', '_' and '-', "
        "starting with a letter or digit, at most 63 bytes");
  }
  return std::nullopt;
}

std::optional<std::string> set_tls(PoolEngine& engine, const std::string& dir) {
  if (!engine.endpoint.starts_with("tcp://")) {
    return std::string("only a tcp:// engine takes TLS certificates");
  }
  if (!engine.tls_cert_path.empty()) {
    return std::string("given twice for one engine");
  }
  if (dir.empty() || dir[0] != '/') {
    return std::string("expected an absolute path");
  }
  engine.tls_cert_path = dir;
  return std::nullopt;
}

// ssh_identity= or ssh_known_hosts=: a file of an ssh:// engine's own, set once.
std::optional<std::string> set_ssh_file(PoolEngine& engine, std::string& field,
                                        const std::string& file) {
  if (!engine.endpoint.starts_with("ssh://")) {
    return std::string("only an ssh:// engine takes ssh files");
  }
  if (!field.empty()) {
    return std::string("given twice for one engine");
  }
  if (file.empty() || file[0] != '/') {
    return std::string("expected an absolute path");
  }
  field = file;
  return std::nullopt;
}

std::optional<std::string> set_max_runs(PoolEngine& engine, const std::string& text) {
  if (engine.max_runs) {
    return std::string("given twice for one engine");
  }
  if (text.empty() || text.size() > 4 ||
      text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(text) > k_max_runs_ceiling) {
    return "expected a whole number from 0 to " + std::to_string(k_max_runs_ceiling);
  }
  engine.max_runs = std::stoll(text);
  return std::nullopt;
}

std::optional<std::string> add_label(PoolEngine& engine, const std::string& label) {
  if (auto error = valid_label(label)) {
    return error;
  }
  if (std::find(engine.labels.begin(), engine.labels.end(), label) != engine.labels.end()) {
    return std::string("given twice for one engine");
  }
  engine.labels.push_back(label);
  return std::nullopt;
}

// engine=KIND: this engine's client and dialect, whatever engine.name says, so one list can hold
// a docker engine and podman's API service.
std::optional<std::string> set_kind(PoolEngine& engine, const std::string& kind) {
  if (!engine.engine.empty()) {
    return std::string("given twice for one engine");
  }
  if (kind != "docker" && kind != "podman") {
    return std::string("expected docker or podman");
  }
  engine.engine = kind;
  return std::nullopt;
}

// One OPTION=VALUE word, for the engine it follows.
std::optional<std::string> apply_option(PoolEngine& engine, const std::string& word) {
  size_t equals = word.find('=');
  std::string name = word.substr(0, equals);
  std::string value = word.substr(equals + 1);
  if (name == "tls_cert_path") {
    return set_tls(engine, value);
  }
  if (name == "max_runs") {
    return set_max_runs(engine, value);
  }
  if (name == "label") {
    return add_label(engine, value);
  }
  if (name == "engine") {
    return set_kind(engine, value);
  }
  if (name == "ssh_identity" || name == "ssh_known_hosts") {
    return set_ssh_file(
        engine, name == "ssh_identity" ? engine.ssh_identity : engine.ssh_known_hosts, value);
  }
  return std::string(
      "unknown option of an engine (engine=, tls_cert_path=, ssh_identity=, ssh_known_hosts=, "
      "max_runs=, label=)");
}

// One word of a comma-separated entry: an endpoint starts an engine; an option belongs to the
// engine before it in the same entry (`opened` says whether the entry has one yet).
std::optional<std::string> add_word(std::vector<PoolEngine>& engines, bool& opened,
                                    const std::string& word) {
  if (word.find('=') != std::string::npos) {
    if (!opened) {
      return std::string("an option follows its engine's endpoint in the same entry");
    }
    return apply_option(engines.back(), word);
  }
  if (auto error = valid_endpoint(word)) {
    return error;
  }
  if (std::any_of(engines.begin(), engines.end(),
                  [&](const PoolEngine& engine) { return engine.endpoint == word; })) {
    return std::string("listed twice");
  }
  engines.push_back({word, {}, {}, {}});
  opened = true;
  return std::nullopt;
}

std::vector<std::string> comma_entries(const std::string& text) {
  std::vector<std::string> entries{""};
  for (char c : text) {
    if (c == ',') {
      entries.emplace_back();
    } else {
      entries.back() += c;
    }
  }
  return entries;
}

}  // namespace

std::optional<std::string> valid_endpoint(const std::string& v) {
  if (v.empty() || v.starts_with("unix:///") || v.starts_with("ssh://") ||
      v.starts_with("tcp://")) {
    return std::nullopt;
  }
  return std::string("expected unix:///path, ssh://[user@]host or tcp://host:port");
}

std::variant<std::vector<PoolEngine>, std::string> parse_pool_engines(const std::string& text) {
  std::vector<PoolEngine> engines;
  for (const auto& entry : comma_entries(text)) {
    bool opened = false;
    for (const auto& word : split_words(entry)) {
      if (auto error = add_word(engines, opened, word)) {
        return quoted(word) + ": " + *error;
      }
    }
  }
  return engines;
}

std::string render_pool_options(const PoolEngine& engine) {
  std::vector<std::string> words;
  if (!engine.engine.empty()) {
    words.push_back("engine=" + engine.engine);
  }
  if (!engine.tls_cert_path.empty()) {
    words.push_back("tls_cert_path=" + engine.tls_cert_path);
  }
  if (!engine.ssh_identity.empty()) {
    words.push_back("ssh_identity=" + engine.ssh_identity);
  }
  if (!engine.ssh_known_hosts.empty()) {
    words.push_back("ssh_known_hosts=" + engine.ssh_known_hosts);
  }
  if (engine.max_runs) {
    words.push_back("max_runs=" + std::to_string(*engine.max_runs));
  }
  for (const auto& label : engine.labels) {
    words.push_back("label=" + label);
  }
  return join(words, " ");
}

std::string render_pool_engine(const PoolEngine& engine) {
  std::string options = render_pool_options(engine);
  return options.empty() ? engine.endpoint : engine.endpoint + " " + options;
}

bool carries_labels(const PoolEngine& engine, const std::vector<std::string>& required) {
  return std::all_of(required.begin(), required.end(), [&](const std::string& label) {
    return std::find(engine.labels.begin(), engine.labels.end(), label) != engine.labels.end();
  });
}

Key endpoints_key() {
  return {{"engine.endpoints",
           "the engines a run is placed on (the least loaded by share of its cap that answers, "
           "carrying engine.require_labels), each `ENDPOINT [engine=docker|podman] "
           "[tls_cert_path=DIR] [ssh_identity=F] [ssh_known_hosts=F] [max_runs=N] "
           "[label=NAME]...` (unix:///path, ssh://user@host, "
           "tcp://host:2376), separated by commas or one `endpoints =` line each; empty: "
           "engine.endpoint alone",
           "", KeyTrust::trusted},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            auto parsed = parse_pool_engines(v);
            if (const auto* error = std::get_if<std::string>(&parsed)) {
              return *error;
            }
            p.endpoints = std::get<std::vector<PoolEngine>>(std::move(parsed));
            return std::nullopt;
          },
          {},
          [](const Policy& p, std::string_view) {
            std::vector<std::string> entries;
            for (const auto& engine : p.endpoints) {
              entries.push_back(render_pool_engine(engine));
            }
            return join(entries, ", ");
          }};
}

Key require_labels_key() {
  return {{"engine.require_labels",
           "labels (separated by commas or spaces) an engine of engine.endpoints must carry "
           "(label= in its entry) to take a run; empty: any engine",
           "", KeyTrust::trusted},
          [](Policy& p, std::string_view, const std::string& v) -> std::optional<std::string> {
            std::string text = v;
            std::replace(text.begin(), text.end(), ',', ' ');
            std::vector<std::string> labels;
            for (const auto& label : split_words(text)) {
              if (auto error = valid_label(label)) {
                return quoted(label) + ": " + *error;
              }
              if (std::find(labels.begin(), labels.end(), label) == labels.end()) {
                labels.push_back(label);
              }
            }
            p.require_labels = labels;
            return std::nullopt;
          },
          {},
          [](const Policy& p, std::string_view) { return join(p.require_labels, " "); }};
}

}  // namespace sandshim::shim
