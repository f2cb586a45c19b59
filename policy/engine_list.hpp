#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "policy/policy.hpp"

namespace sandshim::shim {

// engine.endpoints' syntax: engines separated by commas (or, as before options existed, by
// spaces between two endpoints), each `ENDPOINT [engine=docker|podman] [tls_cert_path=DIR]
// [ssh_identity=FILE] [ssh_known_hosts=FILE] [max_runs=N] [label=NAME]...`.
// Repeated `endpoints =` lines of one file are one list (apply_settings joins them), so each
// engine can have a line of its own.

// Whether `endpoint` is one engine.endpoint takes (empty: the local socket); the error if not.
std::optional<std::string> valid_endpoint(const std::string& endpoint);

// The engines `text` names, or the first error, quoting the word it is about.
std::variant<std::vector<PoolEngine>, std::string> parse_pool_engines(const std::string& text);

// One entry as the list writes it: "tcp://h:2376 tls_cert_path=/d max_runs=2 label=gpu".
std::string render_pool_engine(const PoolEngine& engine);
// The options of an entry alone ("max_runs=2 label=gpu"); empty when it carries none.
std::string render_pool_options(const PoolEngine& engine);

// Whether `engine` carries every label of `required`.
bool carries_labels(const PoolEngine& engine, const std::vector<std::string>& required);

}  // namespace sandshim::shim
