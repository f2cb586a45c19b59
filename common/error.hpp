#pragma once

#include <stdexcept>
#include <string>

namespace sandshim {

// Exit codes follow `docker run` (125/126/127) and `timeout` (124) so callers can tell who failed.
namespace exit_code {
inline constexpr int k_ok = 0;
inline constexpr int k_timeout = 124;
inline constexpr int k_sandbox_error = 125;
inline constexpr int k_cannot_execute = 126;
inline constexpr int k_not_found = 127;
inline constexpr int k_usage = 2;
}  // namespace exit_code

// An error that ends the command: one line for the user and the exit code to return.
class Fatal : public std::runtime_error {
 public:
  explicit Fatal(const std::string& message, int code = exit_code::k_sandbox_error)
      : std::runtime_error(message), m_code(code) {}
  int code() const { return m_code; }

 private:
  int m_code;
};

}  // namespace sandshim
