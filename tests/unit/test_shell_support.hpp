#pragma once

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

namespace sandshim::test {

// stdout (and stderr with `2>&1` in the command) of a shell command.
inline std::string output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    out.append(buffer, n);
  }
  ::pclose(pipe);
  return out;
}

}  // namespace sandshim::test
