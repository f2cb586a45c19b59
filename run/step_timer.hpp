#pragma once

#include <chrono>
#include <string>

namespace sandshim::shim {

// Logs at debug how long one step of a run took and when it ended, in ms since the process
// started: with SANDSHIM_LOG=debug a run shows where its time goes, each engine call with its
// time (bench/latency.sh's breakdown reads these lines).
class StepTimer {
 public:
  explicit StepTimer(std::string step);
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  ~StepTimer();

  // Ends the step now (rather than at the end of the scope), with a note on its outcome.
  void done(const std::string& note = "");

 private:
  std::string m_step;
  std::chrono::steady_clock::time_point m_start;
  bool m_done = false;
};

// Milliseconds since this process started (since its static initialisation, in fact).
double ms_since_process_start();

}  // namespace sandshim::shim
