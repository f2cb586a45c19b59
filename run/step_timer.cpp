#include "run/step_timer.hpp"

#include <spdlog/spdlog.h>

namespace sandshim::shim {

namespace {

const std::chrono::steady_clock::time_point k_process_start = std::chrono::steady_clock::now();

double ms_between(std::chrono::steady_clock::time_point from,
                  std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

double ms_since_process_start() {
  return ms_between(k_process_start, std::chrono::steady_clock::now());
}

StepTimer::StepTimer(std::string step)
    : m_step(std::move(step)), m_start(std::chrono::steady_clock::now()) {}

StepTimer::~StepTimer() {
  done();
}

void StepTimer::done(const std::string& note) {
  if (m_done) {
    return;
  }
  m_done = true;
  if (spdlog::should_log(spdlog::level::debug)) {
    auto now = std::chrono::steady_clock::now();
    spdlog::debug("step {}: {:.1f} ms, at +{:.1f} ms{}{}", m_step, ms_between(m_start, now),
                  ms_between(k_process_start, now), note.empty() ? "" : ": ", note);
  }
}

}  // namespace sandshim::shim
