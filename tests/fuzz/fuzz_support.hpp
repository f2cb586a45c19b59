#pragma once

// What every fuzz target shares: a quiet logger and a named way to fail. A target aborts only on
// a broken invariant; the expected refusals of bad input (Fatal, PayloadError) are caught.

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace sandshim::fuzz {

// Logs are the same for every input and only slow the fuzzer down.
inline void quiet_logs() {
  static const bool once = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)once;
}

// An invariant the code promises does not hold: libFuzzer keeps the input as a crash.
[[noreturn]] inline void broken(std::string_view what) {
  std::fprintf(stderr, "fuzz invariant broken: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

inline void require(bool condition, std::string_view what) {
  if (!condition) {
    broken(what);
  }
}

}  // namespace sandshim::fuzz
