#include "engine/engine_fault.hpp"

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

namespace sandshim::shim {

namespace {

constexpr std::array<std::pair<EngineErrorKind, std::string_view>, 4> k_kind_names = {{
    {EngineErrorKind::image_missing, "image_missing"},
    {EngineErrorKind::unreachable, "unreachable"},
    {EngineErrorKind::permission, "permission"},
    {EngineErrorKind::other, "other"},
}};

std::optional<EngineErrorKind> kind_named(std::string_view name) {
  for (const auto& [kind, kind_name] : k_kind_names) {
    if (kind_name == name) {
      return kind;
    }
  }
  return std::nullopt;
}

std::string_view name_of(EngineErrorKind kind) {
  for (const auto& [each, name] : k_kind_names) {
    if (each == kind) {
      return name;
    }
  }
  return "other";
}

}  // namespace

std::string encode_api_fault(const ApiFault& fault) {
  nlohmann::json report = {{"kind", name_of(fault.kind)},
                           {"lost", fault.lost},
                           {"reason", fault.reason.substr(0, k_api_fault_reason_bytes)}};
  // An engine's message cut mid-character must still encode: replace, never throw.
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ApiFault> decode_api_fault(std::string_view text) {
  auto report = nlohmann::json::parse(text, nullptr, false);
  if (!report.is_object() || !report.contains("kind") || !report["kind"].is_string() ||
      !report.contains("lost") || !report["lost"].is_boolean() || !report.contains("reason") ||
      !report["reason"].is_string()) {
    return std::nullopt;
  }
  auto kind = kind_named(report["kind"].get<std::string>());
  if (!kind) {
    return std::nullopt;
  }
  return ApiFault{*kind, report["lost"].get<bool>(), report["reason"].get<std::string>()};
}

std::string describe_engine_lost(const std::string& reason, const std::string& info_command) {
  return "the container engine was lost while the command ran (" + reason +
         "); the command may have run in part; its guardian removes the container once the "
         "engine answers again; check the engine with " +
         info_command;
}

}  // namespace sandshim::shim
