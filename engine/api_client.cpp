#include "engine/api_client.hpp"

#include <nlohmann/json.hpp>

#include "engine/connection.hpp"

namespace sandshim::engine {

namespace {

using detail::http::verb;

// The engine's answers to these verbs are small JSON documents; an image's config is the
// largest (its history), a container list the longest.
constexpr uint64_t k_max_body_bytes = 8 << 20;

verb verb_of(const std::string& method) {
  if (method == "PUT") {
    return verb::put;
  }
  return method == "POST" ? verb::post : method == "DELETE" ? verb::delete_ : verb::get;
}

// /containers/{id} and what follows it.
std::string container_target(const std::string& container, const std::string& rest) {
  return "/containers/" + detail::url_escape(container) + rest;
}

// {"label":["a","b=c"]} for the engine's `filters` parameter.
std::string label_filter(const std::string& label) {
  return nlohmann::json{{"label", {label}}}.dump();
}

std::string image_target(const std::string& reference) {
  return "/images/" + detail::url_escape(reference, "/:@") + "/json";
}

nlohmann::json parsed_body(const Reply& reply) {
  return reply.ok() ? nlohmann::json::parse(reply.body, nullptr, false) : nlohmann::json();
}

}  // namespace

ApiClient::ApiClient(Transport transport, std::chrono::milliseconds timeout)
    : m_transport(std::move(transport)), m_timeout(timeout) {}

Reply ApiClient::call(const std::string& method, const std::string& target, std::string body,
                      std::chrono::milliseconds timeout) const {
  detail::Session session;
  auto request = detail::make_request(verb_of(method), target, std::move(body));
  detail::http::response_parser<detail::http::string_body> parser;
  parser.body_limit(k_max_body_bytes);
  if (detail::connect_and_send(session, m_transport, request, timeout)) {
    detail::read_message(session, parser);
  }
  return detail::reply_of(session, parser);
}

Reply ApiClient::exchange(const std::string& method, const std::string& target, std::string body,
                          const std::string& content_type, uint64_t max_body_bytes) const {
  detail::Session session;
  auto request = detail::make_request(verb_of(method), target, std::move(body), content_type);
  detail::http::response_parser<detail::http::string_body> parser;
  parser.body_limit(max_body_bytes);
  if (detail::connect_and_send(session, m_transport, request, m_timeout)) {
    detail::read_message(session, parser);
  }
  return detail::reply_of(session, parser);
}

Reply ApiClient::put_archive(const std::string& container, const std::string& directory,
                             std::string archive) const {
  return exchange("PUT",
                  container_target(container, "/archive?path=" + detail::url_escape(directory)),
                  std::move(archive), "application/x-tar", k_max_body_bytes);
}

Reply ApiClient::get_archive(const std::string& container, const std::string& path,
                             uint64_t max_bytes) const {
  return exchange("GET", container_target(container, "/archive?path=" + detail::url_escape(path)),
                  {}, "", max_bytes);
}

Reply ApiClient::create_volume(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels) const {
  nlohmann::json body = {{"Name", name}, {"Labels", nlohmann::json::object()}};
  for (const auto& [key, value] : labels) {
    body["Labels"][key] = value;
  }
  return call("POST", "/volumes/create", body.dump(), m_timeout);
}

Reply ApiClient::inspect_volume(const std::string& name) const {
  return call("GET", "/volumes/" + detail::url_escape(name), {}, m_timeout);
}

Reply ApiClient::remove_volume(const std::string& name) const {
  return call("DELETE", "/volumes/" + detail::url_escape(name), {}, m_timeout);
}

Reply ApiClient::list_volumes_by_name(const std::string& part) const {
  return call("GET",
              "/volumes?filters=" + detail::url_escape(nlohmann::json{{"name", {part}}}.dump()), {},
              m_timeout);
}

struct PendingReply::State {
  detail::Session session;
  detail::http::response_parser<detail::http::string_body> parser;
};

PendingReply::PendingReply() = default;
PendingReply::PendingReply(PendingReply&&) noexcept = default;
PendingReply& PendingReply::operator=(PendingReply&&) noexcept = default;
PendingReply::~PendingReply() = default;
PendingReply::PendingReply(std::unique_ptr<State> state) : m_state(std::move(state)) {}

bool PendingReply::sent() const {
  return m_state != nullptr && !m_state->session.failed();
}

Reply PendingReply::get(std::chrono::milliseconds wait) {
  if (!m_reply && m_state) {
    if (!m_state->session.failed()) {
      m_state->session.stream.expires_after(wait);
      detail::read_message(m_state->session, m_state->parser);
    }
    m_reply = detail::reply_of(m_state->session, m_state->parser);
    m_state.reset();
  }
  return m_reply.value_or(Reply{0, "", Fault::unreachable, "nothing was sent"});
}

PendingReply ApiClient::send(const std::string& method, const std::string& target) const {
  auto state = std::make_unique<PendingReply::State>();
  state->parser.body_limit(k_max_body_bytes);
  auto request = detail::make_request(verb_of(method), target);
  detail::connect_and_send(state->session, m_transport, request, m_timeout);
  return PendingReply(std::move(state));
}

PendingReply ApiClient::send_inspect_image(const std::string& reference) const {
  return send("GET", image_target(reference));
}

Reply ApiClient::ping() const {
  return call("GET", "/_ping", {}, m_timeout);
}

Reply ApiClient::version() const {
  return call("GET", "/version", {}, m_timeout);
}

Reply ApiClient::info() const {
  return call("GET", "/info", {}, m_timeout);
}

Reply ApiClient::inspect_image(const std::string& reference) const {
  return call("GET", image_target(reference), {}, m_timeout);
}

Reply ApiClient::create(const std::string& name, const std::string& config_json) const {
  return call("POST", "/containers/create?name=" + detail::url_escape(name), config_json,
              m_timeout);
}

// Versioned: podman serves libpod's routes under /v{version}/libpod only; 4.0.0 is the oldest
// libpod API a 4.x service answers.
Reply ApiClient::create_libpod(const std::string& spec_json) const {
  return call("POST", "/v4.0.0/libpod/containers/create", spec_json, m_timeout);
}

Reply ApiClient::start(const std::string& container) const {
  return call("POST", "/containers/" + detail::url_escape(container) + "/start", {}, m_timeout);
}

std::string ApiClient::wait_target(const std::string& container, const std::string& condition) {
  return "/containers/" + detail::url_escape(container) +
         "/wait?condition=" + detail::url_escape(condition);
}

Reply ApiClient::wait(const std::string& container, const std::string& condition,
                      std::chrono::milliseconds timeout) const {
  return call("POST", wait_target(container, condition), {}, timeout);
}

PendingReply ApiClient::send_wait(const std::string& container,
                                  const std::string& condition) const {
  return send("POST", wait_target(container, condition));
}

Reply ApiClient::resize(const std::string& container, int rows, int columns) const {
  return call("POST",
              "/containers/" + detail::url_escape(container) + "/resize?h=" + std::to_string(rows) +
                  "&w=" + std::to_string(columns),
              {}, m_timeout);
}

Reply ApiClient::kill(const std::string& container, const std::string& signal) const {
  return call(
      "POST",
      "/containers/" + detail::url_escape(container) + "/kill?signal=" + detail::url_escape(signal),
      {}, m_timeout);
}

Reply ApiClient::remove(const std::string& container) const {
  return call("DELETE", "/containers/" + detail::url_escape(container) + "?force=true&v=true", {},
              m_timeout);
}

Reply ApiClient::list_by_label(const std::string& label) const {
  return call("GET", "/containers/json?all=true&filters=" + detail::url_escape(label_filter(label)),
              {}, m_timeout);
}

std::string image_id(const Reply& reply) {
  auto json = parsed_body(reply);
  return json.is_object() && json.contains("Id") && json["Id"].is_string()
             ? json["Id"].get<std::string>()
             : "";
}

std::optional<int> wait_status(const Reply& reply) {
  auto json = parsed_body(reply);
  if (json.is_object() && json.contains("StatusCode") && json["StatusCode"].is_number_integer()) {
    return json["StatusCode"].get<int>();
  }
  return std::nullopt;
}

std::string error_message(const Reply& reply) {
  if (!reply.answered()) {
    return reply.describe();
  }
  auto json = nlohmann::json::parse(reply.body, nullptr, false);
  if (json.is_object() && json.contains("message") && json["message"].is_string()) {
    return json["message"].get<std::string>();
  }
  return reply.describe();
}

std::vector<std::string> container_ids(const Reply& reply) {
  std::vector<std::string> ids;
  auto json = parsed_body(reply);
  for (const auto& container : json.is_array() ? json : nlohmann::json::array()) {
    if (container.is_object() && container.contains("Id") && container["Id"].is_string()) {
      ids.push_back(container["Id"].get<std::string>());
    }
  }
  return ids;
}

}  // namespace sandshim::engine
