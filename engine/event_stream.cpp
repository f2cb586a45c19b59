#include "engine/event_stream.hpp"

#include <poll.h>

#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/api_client.hpp"
#include "engine/connection.hpp"

namespace sandshim::engine {

namespace {

// A line longer than this is not an event: the stream is dropped rather than grown without end.
constexpr size_t k_max_line_bytes = 1 << 20;
constexpr std::chrono::milliseconds k_refusal_timeout{1000};

std::string json_string(const nlohmann::json& json, const char* key) {
  return json.contains(key) && json[key].is_string() ? json[key].get<std::string>() : "";
}

void add_filter(nlohmann::json& filters, const char* key, const std::vector<std::string>& values) {
  if (!values.empty()) {
    filters[key] = values;
  }
}

}  // namespace

std::string Event::name() const {
  auto found = attributes.find("name");
  return found == attributes.end() ? "" : found->second;
}

// Docker says "Type"/"Action"/"Actor"; older engines and podman's compat layer also "status".
std::optional<Event> parse_event(std::string_view line) {
  auto json = nlohmann::json::parse(line, nullptr, false);
  if (!json.is_object()) {
    return std::nullopt;
  }
  Event event;
  event.type = json_string(json, "Type");
  event.action = json_string(json, "Action");
  if (event.action.empty()) {
    event.action = json_string(json, "status");
  }
  if (json.contains("Actor") && json["Actor"].is_object()) {
    const auto& actor = json["Actor"];
    event.id = json_string(actor, "ID");
    if (actor.contains("Attributes") && actor["Attributes"].is_object()) {
      for (const auto& [key, value] : actor["Attributes"].items()) {
        if (value.is_string()) {
          event.attributes[key] = value.get<std::string>();
        }
      }
    }
  }
  if (json.contains("timeNano") && json["timeNano"].is_number_integer()) {
    event.time_ns = json["timeNano"].get<int64_t>();
  }
  if (event.action.empty()) {
    return std::nullopt;
  }
  return event;
}

std::string events_target(const EventFilter& filter) {
  nlohmann::json filters = nlohmann::json::object();
  if (!filter.type.empty()) {
    filters["type"] = {filter.type};
  }
  add_filter(filters, "container", filter.containers);
  add_filter(filters, "event", filter.actions);
  add_filter(filters, "label", filter.labels);
  std::string target = "/events?filters=" + detail::url_escape(filters.dump());
  if (filter.since_s > 0) {
    target += "&since=" + std::to_string(filter.since_s);
  }
  return target;
}

struct EventStream::State {
  detail::Session session;
  detail::http::response_parser<detail::http::string_body> parser;
  std::vector<Event> early;  // read while awaiting the confirmation, not yet delivered
};

EventStream::EventStream() = default;
EventStream::EventStream(EventStream&&) noexcept = default;
EventStream& EventStream::operator=(EventStream&&) noexcept = default;
EventStream::~EventStream() = default;

EventStream::EventStream(std::unique_ptr<State> state, Reply reply)
    : m_state(std::move(state)), m_reply(std::move(reply)) {
  if (!m_reply.answered()) {
    m_state.reset();
    m_ended = true;
  }
}

bool EventStream::subscribed() const {
  return m_state != nullptr && (m_reply.status == 0 || m_reply.status == 200);
}

bool EventStream::confirmed() const {
  return m_state != nullptr && m_reply.status == 200;
}

int EventStream::fd() const {
  return m_state ? m_state->session.stream.socket().native_handle() : -1;
}

std::vector<Event> EventStream::read_available() {
  std::vector<Event> events;
  read_some(events);
  return events;
}

bool EventStream::await_confirmation(std::chrono::milliseconds wait) {
  auto give_up = std::chrono::steady_clock::now() + wait;
  while (!confirmed() && !m_ended) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now());
    pollfd ready{fd(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) == 0) {
      end(Fault::timeout, "the engine did not answer the subscription");
      break;
    }
    read_some(m_state->early);
  }
  return confirmed();
}

// Reads until the socket has nothing more; the header, once complete, decides whether the
// engine accepted the subscription.
void EventStream::read_some(std::vector<Event>& events) {
  if (m_state) {
    std::move(m_state->early.begin(), m_state->early.end(), std::back_inserter(events));
    m_state->early.clear();
  }
  while (m_state && !m_ended) {
    detail::beast::error_code error;
    detail::http::read_some(m_state->session.stream.socket(), m_state->session.buffer,
                            m_state->parser, error);
    if (m_state->parser.is_header_done() && m_reply.status == 0) {
      m_reply.status = m_state->parser.get().result_int();
    }
    if (m_reply.status != 0 && m_reply.status != 200) {  // refused: its body says why
      read_refusal();
      break;
    }
    take_lines(events);
    if (error == detail::net::error::would_block) {
      break;
    }
    if (error || m_state->parser.is_done()) {
      m_ended = true;
    }
  }
}

// The rest of a refusal, which is short: read under a deadline of its own.
void EventStream::read_refusal() {
  if (!m_state->parser.is_done()) {
    m_state->session.stream.expires_after(k_refusal_timeout);
    detail::read_message(m_state->session, m_state->parser);
  }
  end(Fault::none, "");
}

void EventStream::end(Fault fault, std::string detail) {
  m_ended = true;
  if (fault != Fault::none) {
    m_reply.fault = fault;
    m_reply.detail = std::move(detail);
  } else if (m_state) {
    m_reply.body = m_state->parser.get().body();
  }
}

// Complete lines leave the body as events; a partial line waits for the rest.
void EventStream::take_lines(std::vector<Event>& events) {
  std::string& body = m_state->parser.get().body();
  size_t start = 0;
  for (size_t end = body.find('\n'); end != std::string::npos; end = body.find('\n', start)) {
    if (auto event = parse_event(std::string_view(body).substr(start, end - start))) {
      events.push_back(std::move(*event));
    }
    start = end + 1;
  }
  body.erase(0, start);
  if (body.size() > k_max_line_bytes) {
    m_ended = true;
  }
}

EventStream ApiClient::events(const EventFilter& filter) const {
  auto state = std::make_unique<EventStream::State>();
  state->parser.body_limit(boost::none);
  auto request = detail::make_request(detail::http::verb::get, events_target(filter));
  Reply reply;
  if (detail::connect_and_send(state->session, m_transport, request, m_timeout)) {
    state->session.stream.expires_never();
    detail::beast::error_code error;
    state->session.stream.socket().non_blocking(true, error);
    state->session.check(error);
  }
  reply.fault = state->session.fault;
  reply.detail = state->session.detail;
  reply.denied = state->session.denied;
  return EventStream(std::move(state), std::move(reply));
}

}  // namespace sandshim::engine
