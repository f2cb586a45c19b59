#pragma once

#include "run/sandbox.hpp"

namespace sandshim::shim {

// The real engine of a run: the client found on the policy's search path, its cgroup facts, its
// run loop, and the warm pool (pool.size > 0) behind the run's claim, refill and fill.
RunEngine real_run_engine();

}  // namespace sandshim::shim
