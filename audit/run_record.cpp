#include "audit/run_record.hpp"

#include "audit/encoding.hpp"
#include "audit/enum_names.hpp"
#include "common/hex.hpp"

namespace sandshim::audit {

namespace {

constexpr EnumNames<RunStatus, 9> k_status_names{{{
    {RunStatus::running, "running"},
    {RunStatus::ok, "ok"},
    {RunStatus::error, "error"},
    {RunStatus::timeout, "timeout"},
    {RunStatus::oom, "oom"},
    {RunStatus::killed, "killed"},
    {RunStatus::refused, "refused"},
    {RunStatus::engine_error, "engine_error"},
    {RunStatus::abandoned, "abandoned"},
}}};

}  // namespace

std::string to_string(RunStatus status) {
  return k_status_names.name(status);
}

std::optional<RunStatus> run_status_from_string(const std::string& text) {
  return k_status_names.parse(text);
}

std::vector<std::string> run_status_names() {
  return k_status_names.names();
}

std::string new_record_id() {
  return random_hex(12);
}

}  // namespace sandshim::audit
