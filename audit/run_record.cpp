#include "audit/run_record.hpp"

#include <sys/random.h>

#include "audit/encoding.hpp"
#include "audit/enum_names.hpp"
#include "common/error.hpp"

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
  unsigned char bytes[12];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    throw Fatal("cannot make a record id: getrandom failed");
  }
  return to_hex(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

}  // namespace sandshim::audit
