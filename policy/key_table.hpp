#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/policy.hpp"

namespace sandshim::shim {

// The policy's key table, one row per key: its documentation and trust, how a value is parsed
// into the policy, which of two values is looser, and how a value is shown. policy.cpp applies
// layers through it; everything else reads policy_keys() (policy/policy.hpp).

// Parses `value` into the policy and validates it; returns an error text or nullopt. Trust is
// not its business: check_trust decides that, for every key, in one place. `subkey` is COMMAND
// of images.COMMAND, empty for every other key.
using Setter = std::function<std::optional<std::string>(Policy&, std::string_view subkey,
                                                        const std::string& value)>;
// True when `candidate`'s value is looser than `than`'s; empty for keys without an order.
using Looser =
    std::function<bool(const Policy& than, const Policy& candidate, std::string_view subkey)>;
using Renderer = std::function<std::string(const Policy&, std::string_view subkey)>;

struct Key {
  KeyInfo info;
  Setter set;
  Looser looser;
  Renderer render;
};

// Every key, in the order `sandshim policy keys` and the docs show them.
const std::vector<Key>& key_table();

// The rows of engine.endpoints and engine.require_labels (policy/engine_list.cpp).
Key endpoints_key();
Key require_labels_key();

// The key a setting names, and COMMAND for images.COMMAND; nullptr when none.
std::pair<const Key*, std::string_view> find_key(std::string_view name);

}  // namespace sandshim::shim
