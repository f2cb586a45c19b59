#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandshim::shim {

// What went wrong with the engine, whichever way the run reached it: the client's error line
// (client_output.hpp) or the API client's typed fault (below).
enum class EngineErrorKind {
  image_missing,  // the image is not in the engine's store
  unreachable,    // the engine does not answer on its socket
  permission,     // the caller may not use the engine
  other,
};

// Why the API client's run ended without the container's own status, sent to the run loop as
// data on a pipe of its own: the run loop never reads the API path's errors back from text.
struct ApiFault {
  EngineErrorKind kind = EngineErrorKind::other;
  bool lost = false;   // the engine went away after the container started
  std::string reason;  // the engine's message, or the system's words for the fault
};

// One JSON object; the reason is cut to k_api_fault_reason_bytes, so the report stays under
// k_api_fault_report_bytes (escapes included), which a pipe holds without a reader: the client
// writes it whole and exits, whatever the engine said.
inline constexpr size_t k_api_fault_reason_bytes = 2048;
inline constexpr size_t k_api_fault_report_bytes = 16 << 10;
std::string encode_api_fault(const ApiFault& fault);

// nullopt for anything that is not a whole report (a client killed mid-write, or none at all).
std::optional<ApiFault> decode_api_fault(std::string_view text);

// The one line for a run whose engine went away while it ran, with the engine's `reason`.
std::string describe_engine_lost(const std::string& reason, const std::string& info_command);

}  // namespace sandshim::shim
