#include "hooks/agents/payload.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>

#include "common/strings.hpp"

namespace sandshim::hooks::payload {

namespace {

const Json* field(const Json& object, std::string_view key) {
  if (!object.is_object()) {
    throw PayloadError("the payload is not a JSON object");
  }
  auto found = object.find(std::string(key));
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

}  // namespace

std::string text(const Json& object, std::string_view key) {
  const Json* value = field(object, key);
  if (value == nullptr) {
    return "";
  }
  if (!value->is_string()) {
    throw PayloadError("field " + quoted(key) + " is not a string");
  }
  return value->get<std::string>();
}

std::string required_text(const Json& object, std::string_view key) {
  std::string value = text(object, key);
  if (value.empty()) {
    throw PayloadError("field " + quoted(key) + " is missing");
  }
  return value;
}

std::string shell_command(const Json& tool_input, bool before) {
  return before ? required_text(tool_input, "command") : text(tool_input, "command");
}

bool flag(const Json& object, std::string_view key) {
  const Json* value = field(object, key);
  return value != nullptr && value->is_boolean() && value->get<bool>();
}

Json object(const Json& object, std::string_view key) {
  const Json* value = field(object, key);
  if (value == nullptr) {
    return Json::object();
  }
  if (!value->is_object()) {
    throw PayloadError("field " + quoted(key) + " is not an object");
  }
  return *value;
}

std::string derived_id(std::initializer_list<std::string_view> parts) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a: stable across runs and hosts
  for (std::string_view part : parts) {
    for (unsigned char c : part) {
      hash = (hash ^ c) * 0x100000001b3ULL;
    }
    hash = (hash ^ 0xffU) * 0x100000001b3ULL;  // separates ("ab","c") from ("a","bc")
  }
  static constexpr std::string_view k_hex = "0123456789abcdef";
  std::string id = "sandshim-";
  for (int shift = 60; shift >= 0; shift -= 4) {
    id += k_hex[(hash >> shift) & 0xf];
  }
  return id;
}

std::string tail(std::string_view text, size_t bytes) {
  return std::string(text.size() <= bytes ? text : text.substr(text.size() - bytes));
}

std::optional<int> number_after(std::string_view text, std::string_view marker) {
  size_t at = text.find(marker);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(at + marker.size());
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  int value = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  return error == std::errc() && end != rest.data() ? std::optional<int>(value) : std::nullopt;
}

std::string dump(const Json& answer) {
  return answer.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Json with_command(const Json& tool_input, std::string_view key, const std::string& command) {
  Json updated = tool_input.is_object() ? tool_input : Json::object();
  updated[std::string(key)] = command;
  return updated;
}

HookReply no_opinion() {
  return {dump(Json::object()), "", 0, "nothing"};
}

Json pre_tool_use_answer(const std::string& decision, const std::string& reason) {
  Json specific = Json::object();
  specific["hookEventName"] = "PreToolUse";
  specific["permissionDecision"] = decision;
  specific["permissionDecisionReason"] = reason;
  return Json{{"hookSpecificOutput", specific}};
}

}  // namespace sandshim::hooks::payload
