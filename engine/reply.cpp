#include "engine/reply.hpp"

#include <nlohmann/json.hpp>

namespace sandshim::engine {

std::string_view fault_name(Fault fault) {
  switch (fault) {
    case Fault::none:
      return "none";
    case Fault::unreachable:
      return "unreachable";
    case Fault::timeout:
      return "timeout";
    case Fault::malformed:
      return "malformed answer";
    case Fault::too_large:
      return "answer too large";
  }
  return "unknown";
}

// The engine's own reason is the "message" of its JSON error body.
std::string Reply::describe() const {
  if (!answered()) {
    return std::string(fault_name(fault)) + (detail.empty() ? "" : " (" + detail + ")");
  }
  auto json = nlohmann::json::parse(body, nullptr, false);
  std::string message = json.is_object() && json.contains("message") && json["message"].is_string()
                            ? json["message"].get<std::string>()
                            : "";
  return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

}  // namespace sandshim::engine
