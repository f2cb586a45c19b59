// The broker's wire protocol (broker/protocol.hpp): every frame a client may send is refused
// with a ProtocolError or decoded; what is decoded encodes and decodes again to the same value,
// and every decoded value is within the protocol's limits; so is the broker's status answer.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "broker/protocol.hpp"
#include "fuzz_support.hpp"

using namespace sandshim;
using namespace sandshim::broker;

namespace {

void check_run(const RunCall& run) {
  fuzz::require(!run.argv.empty() && run.argv.size() <= k_max_list_entries, "argv out of limits");
  fuzz::require(run.env.size() <= k_max_list_entries, "env over the limit");
  fuzz::require(!run.invoked_as.empty() && run.invoked_as.find('/') == std::string::npos,
                "invoked_as is not a plain name");
  fuzz::require(!run.cwd.empty() && run.cwd.front() == '/', "cwd is not absolute");
  for (const auto& entry : run.env) {
    fuzz::require(entry.find('=') != std::string::npos && entry.front() != '=',
                  "an env entry without NAME=");
  }
}

void check_record(const RecordCall& record) {
  if (const auto* done = std::get_if<CompletionFields>(&record.write)) {
    fuzz::require(!done->tool_use_id.empty(), "a completion without its tool_use_id");
    fuzz::require(done->outcome == "ran" || done->outcome == "not-run", "an unknown outcome");
  }
}

void check_session_close(const SessionCloseCall& close) {
  fuzz::require(!close.agent.empty() && close.agent.size() <= k_max_agent_bytes,
                "an agent's name out of bounds");
  fuzz::require(!close.session_id.empty() && close.session_id.size() <= k_max_session_id_bytes,
                "a session id out of bounds");
}

void check_request(const Request& request) {
  if (const auto* run = std::get_if<RunCall>(&request.call)) {
    check_run(*run);
  } else if (const auto* record = std::get_if<RecordCall>(&request.call)) {
    check_record(*record);
  } else if (const auto* close = std::get_if<SessionCloseCall>(&request.call)) {
    check_session_close(*close);
  }
  std::string encoded = encode(request);
  auto again = decode_client_message(encoded);
  fuzz::require(std::holds_alternative<ClientMessage>(again), "a decoded request does not re-read");
  const auto& reread = std::get<Request>(std::get<ClientMessage>(again));
  fuzz::require(verb_of(reread) == verb_of(request) && reread.log_level == request.log_level &&
                    encode(reread) == encoded,
                "a request does not read back the same");
}

void check_client_message(std::string_view payload) {
  auto decoded = decode_client_message(payload);
  if (std::holds_alternative<ProtocolError>(decoded)) {
    fuzz::require(!std::get<ProtocolError>(decoded).message.empty(), "an error without a rule");
    return;
  }
  const auto& message = std::get<ClientMessage>(decoded);
  if (const auto* request = std::get_if<Request>(&message)) {
    check_request(*request);
  } else {
    fuzz::require(is_forwardable_signal(std::get<Signal>(message).number),
                  "a signal that is not forwarded was accepted");
  }
}

void check_exit(std::string_view payload) {
  auto decoded = decode_exit(payload);
  if (const auto* exit = std::get_if<Exit>(&decoded)) {
    fuzz::require(exit->code >= 0 && exit->code <= 255, "an exit code out of range");
    auto again = decode_exit(encode(*exit));
    fuzz::require(std::holds_alternative<Exit>(again) && std::get<Exit>(again).code == exit->code,
                  "an exit does not read back the same");
  }
}

// The broker's status answer, decoded by `sandshim doctor`: strict, and it reads back the same.
void check_status(std::string_view payload) {
  auto decoded = decode_status(payload);
  if (const auto* status = std::get_if<BrokerStatus>(&decoded)) {
    fuzz::require(status->images.size() <= k_max_list_entries, "images over the limit");
    std::string encoded = encode(*status);
    auto again = decode_status(encoded);
    fuzz::require(std::holds_alternative<BrokerStatus>(again) &&
                      encode(std::get<BrokerStatus>(again)) == encoded,
                  "a status does not read back the same");
  }
}

// The answer to session_close, decoded by a hook: a count, never negative.
void check_session_closed(std::string_view payload) {
  auto decoded = decode_session_closed(payload);
  if (const auto* closed = std::get_if<SessionClosed>(&decoded)) {
    fuzz::require(closed->closed >= 0, "a negative count of closed decisions");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::quiet_logs();
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  check_client_message(payload);
  check_exit(payload);
  check_status(payload);
  check_session_closed(payload);
  if (size >= 4) {
    (void)parse_frame_header(data);
  }
  return 0;
}
