#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "egress/allowlist.hpp"

namespace sandshim::egress {

// One connection through the proxy, as the audit keeps it.
struct ConnectionRecord {
  int64_t start_ms = 0;  // wall clock, when the client connected
  std::string method;    // CONNECT, SOCKS5, GET, ...; empty when the request was unreadable
  std::string name;      // the requested host, as the client wrote it
  uint16_t port = 0;
  std::string address;  // the address connected to (or the one refused); empty: none
  bool allowed = false;
  std::string reason;      // why refused; for an allowed connection, the rule that allowed it
  int64_t bytes_up = 0;    // from the sandbox to the upstream server
  int64_t bytes_down = 0;  // from the upstream server to the sandbox
  int64_t duration_ms = 0;
};

// Records as JSON lines and back: how the proxy process hands them to the run's owner.
std::string encode_record(const ConnectionRecord& record);
ConnectionRecord decode_record(const std::string& line);

// The decision before any connection is made: the refusal reason, or empty when allowed.
// `addresses` are the resolved ones; `chosen` gets those that may be used.
std::string check_name(const AllowList& allow, const std::string& host, uint16_t port);
std::string check_addresses(const AllowList& allow, const std::string& name,
                            const std::vector<std::string>& addresses,
                            std::vector<std::string>& chosen);

// Serves the proxy on `listener` (a listening unix socket) until SIGTERM, then writes
// one encoded record a line to `records_fd`. Runs in the proxy process; for tests and benches too.
void serve(int listener, const AllowList& allow, int records_fd);

// The filtering proxy of one run, in a process of its own (forked from the run's owner, so the
// owner stays single-threaded and its signal handling is untouched), listening on a unix socket.
class ProxyProcess {
 public:
  // Binds `socket_path` (mode 0600 unless `world_connectable`) and forks the server; throws
  // Fatal when it cannot, so the run fails closed.
  static ProxyProcess start(const AllowList& allow, const std::filesystem::path& socket_path,
                            bool world_connectable);
  ProxyProcess(ProxyProcess&& other) noexcept;
  ProxyProcess& operator=(ProxyProcess&&) = delete;
  ProxyProcess(const ProxyProcess&) = delete;
  ProxyProcess& operator=(const ProxyProcess&) = delete;
  ~ProxyProcess();

  // Ends the server and returns every connection it saw (open ones are closed and counted).
  std::vector<ConnectionRecord> stop();

 private:
  ProxyProcess(pid_t pid, UniqueFd records);
  pid_t m_pid = -1;
  UniqueFd m_records;
};

}  // namespace sandshim::egress
