#include "audit/decision_record.hpp"

#include "audit/enum_names.hpp"

namespace sandshim::audit {

namespace {

constexpr EnumNames<Decision, 4> k_decision_names{{{
    {Decision::allow, "allow"},
    {Decision::deny, "deny"},
    {Decision::ask, "ask"},
    {Decision::rewrite, "rewrite"},
}}};

}  // namespace

std::string to_string(Decision decision) {
  return k_decision_names.name(decision);
}

std::optional<Decision> decision_from_string(const std::string& text) {
  return k_decision_names.parse(text);
}

std::vector<std::string> decision_names() {
  return k_decision_names.names();
}

}  // namespace sandshim::audit
