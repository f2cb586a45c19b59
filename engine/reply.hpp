#pragma once

#include <string>
#include <string_view>

namespace sandshim::engine {

// Why an API call has no answer to read: the shim must tell "the engine said no" from "the
// engine did not say anything in time" (a paused engine) from "the engine said nonsense".
enum class Fault {
  none,
  unreachable,  // nothing listens on the socket, or we may not connect to it
  timeout,      // the call's deadline passed (a paused or overloaded engine)
  malformed,    // the answer is not HTTP, or broke off mid-message
  too_large,    // the answer exceeds what the verb may read
};

// The fault's name, for logs and messages.
std::string_view fault_name(Fault fault);

// What one API call returned: the HTTP status and body, or the fault that left it without one.
struct Reply {
  unsigned status = 0;  // 0 unless the engine answered
  std::string body;
  Fault fault = Fault::none;
  std::string detail;  // the system's words for the fault ("Connection refused", …)
  bool denied =
      false;  // unreachable because the socket refused us (EACCES, or EPERM from a filter)

  bool answered() const { return fault == Fault::none; }
  bool ok() const { return answered() && status >= 200 && status < 300; }
  // One phrase for messages: "HTTP 404: No such image" or "timeout (…)".
  std::string describe() const;
};

}  // namespace sandshim::engine
