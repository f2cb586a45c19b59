#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/attach_stream.hpp"
#include "engine/event_stream.hpp"
#include "engine/reply.hpp"
#include "engine/transport.hpp"

namespace sandshim::engine {

namespace detail {
struct Session;
}

// A request already sent whose answer is read later, so the engine works on it while the caller
// does something else (the image probe runs alongside the container's start). Move-only.
class PendingReply {
 public:
  PendingReply();
  PendingReply(PendingReply&&) noexcept;
  PendingReply& operator=(PendingReply&&) noexcept;
  ~PendingReply();

  // Whether the request reached the engine (else get() returns why not).
  bool sent() const;
  // The answer, waiting at most `wait` for it (a paused engine must not hold the caller);
  // once taken, later calls return the same reply.
  Reply get(std::chrono::milliseconds wait);

 private:
  friend class ApiClient;
  struct State;
  explicit PendingReply(std::unique_ptr<State> state);

  std::unique_ptr<State> m_state;
  std::optional<Reply> m_reply;
};

// The Engine API (Docker's, which podman's service speaks too) on a local socket or over TLS
// (transport.hpp), one named verb per call. Every call is bounded by the client's timeout, so an
// engine that stopped answering costs the caller that long at most and never a hang.
class ApiClient {
 public:
  static constexpr std::chrono::milliseconds k_default_timeout{5000};

  explicit ApiClient(Transport transport, std::chrono::milliseconds timeout = k_default_timeout);

  const Transport& transport() const { return m_transport; }
  std::chrono::milliseconds timeout() const { return m_timeout; }

  // Whether the engine answers at all (GET /_ping).
  Reply ping() const;
  // The engine's version and API version as JSON (GET /version).
  Reply version() const;
  // The engine's configuration: cgroup driver and version, limits support (GET /info).
  Reply info() const;
  // The image's configuration and id (GET /images/{ref}/json); 404 when it is not present.
  Reply inspect_image(const std::string& reference) const;
  // inspect_image, sent now and read later.
  PendingReply send_inspect_image(const std::string& reference) const;
  // Creates the container `name` from a JSON create body (POST /containers/create).
  Reply create(const std::string& name, const std::string& config_json) const;
  // Creates a podman container from libpod's SpecGenerator JSON (POST /libpod/containers/create),
  // which carries podman's flags that docker's create body has no field for.
  Reply create_libpod(const std::string& spec_json) const;
  // Starts the created container (POST /containers/{id}/start).
  Reply start(const std::string& container) const;
  // Waits for the container to reach `condition` (not-running | next-exit | removed); `timeout`
  // bounds this call instead of the client's.
  Reply wait(const std::string& container, const std::string& condition,
             std::chrono::milliseconds timeout) const;
  // wait, sent now and read later: sent before start, it cannot miss the exit of a container the
  // engine removes by itself (AutoRemove).
  PendingReply send_wait(const std::string& container, const std::string& condition) const;
  // Tells the container's TTY its new size (POST /containers/{id}/resize).
  Reply resize(const std::string& container, int rows, int columns) const;
  // Sends `signal` ("KILL", "TERM"…) to the container's init (POST /containers/{id}/kill).
  Reply kill(const std::string& container, const std::string& signal) const;
  // Removes the container at once, running or not, with its anonymous volumes.
  Reply remove(const std::string& container) const;
  // Every container carrying `label` (or `label=value`), running or not, as JSON.
  Reply list_by_label(const std::string& label) const;
  // Unpacks the tar `archive` into the created or stopped container at `directory`
  // (PUT /containers/{id}/archive); the directory must exist there.
  Reply put_archive(const std::string& container, const std::string& directory,
                    std::string archive) const;
  // `path` of the container as a tar (GET /containers/{id}/archive); a body past `max_bytes` is
  // a too_large fault, never a truncated tar.
  Reply get_archive(const std::string& container, const std::string& path,
                    uint64_t max_bytes) const;
  // Creates the named volume with `labels` (POST /volumes/create); an existing one is kept.
  Reply create_volume(const std::string& name,
                      const std::vector<std::pair<std::string, std::string>>& labels) const;
  // The named volume's details (GET /volumes/{name}); 404 when there is none.
  Reply inspect_volume(const std::string& name) const;
  // Removes the named volume (DELETE /volumes/{name}); 409 while a container uses it.
  Reply remove_volume(const std::string& name) const;
  // Every volume whose name contains `part`, as JSON ({"Volumes": [...]}).
  Reply list_volumes_by_name(const std::string& part) const;
  // The event stream with these filters, subscribed once the engine answered its header.
  EventStream events(const EventFilter& filter) const;
  // The container's stdin, stdout and stderr as one hijacked connection.
  AttachStream attach(const std::string& container, bool tty) const;

 private:
  Reply call(const std::string& method, const std::string& target, std::string body,
             std::chrono::milliseconds timeout) const;
  Reply exchange(const std::string& method, const std::string& target, std::string body,
                 const std::string& content_type, uint64_t max_body_bytes) const;
  PendingReply send(const std::string& method, const std::string& target) const;
  static std::string wait_target(const std::string& container, const std::string& condition);

  Transport m_transport;
  std::chrono::milliseconds m_timeout;
};

// The image id ("sha256:…") from an inspect_image reply; empty unless a 200 with a string "Id".
std::string image_id(const Reply& reply);

// The exit code from a wait reply ({"StatusCode": N}); nullopt when there is none.
std::optional<int> wait_status(const Reply& reply);

// The engine's own words for a refusal ({"message": "..."}), else the reply described.
std::string error_message(const Reply& reply);

// The container ids from a list reply.
std::vector<std::string> container_ids(const Reply& reply);

}  // namespace sandshim::engine
