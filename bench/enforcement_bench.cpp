// What the enforcement check costs a run: the cached verdict (the hot path) against asking the
// engine (`docker info`, what every run would pay without the cache). Figures are printed, never
// asserted. Usage: sandshim_enforcement_bench [ITERATIONS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/enforcement.hpp"
#include "engine/engine.hpp"
#include "policy/policy.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Median-free and simple: the mean over `iterations`, in microseconds.
double mean_us(int iterations, const std::function<void()>& action) {
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    action();
  }
  std::chrono::duration<double, std::micro> elapsed = Clock::now() - start;
  return elapsed.count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sandshim::shim;
  int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  Policy policy;
  Engine engine = locate_engine(policy);
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "sandshim-enforcement-bench";
  FactsCache cache{dir, std::chrono::seconds(3600), std::chrono::seconds(60)};
  engine_facts(engine, cache);  // warm the cache
  double identity = mean_us(iterations, [&] { engine_identity(engine); });
  double cached = mean_us(iterations, [&] { assess_enforcement(engine_facts(engine, cache)); });
  int probes = std::max(1, iterations / 20);
  double probed = mean_us(probes, [&] { assess_enforcement(probe_engine_facts(engine)); });
  std::printf("%-36s %12s %10s\n", ("step (engine " + engine.kind + ")").c_str(), "mean", "runs");
  std::printf("%-36s %10.1f us %10d\n", "engine identity (stat x4, boot id)", identity, iterations);
  std::printf("%-36s %10.1f us %10d\n", "cached verdict (identity + read)", cached, iterations);
  std::printf("%-36s %10.1f us %10d\n", "uncached: `info` probe", probed, probes);
  std::printf("the cache makes the check %.0fx cheaper\n", probed / cached);
  std::filesystem::remove_all(dir);
  return 0;
}
