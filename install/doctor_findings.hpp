#pragma once

#include <string>

namespace sandshim::install {

// One doctor line: its check, its verdict, what it found, and the command that fixes it.
enum class Status { ok, warn, fail };

const char* to_string(Status status);

struct Finding {
  std::string check;
  Status status;
  std::string detail;
  std::string fix;  // the command that fixes a warning or failure
};

}  // namespace sandshim::install
