// What the image probe costs: `inspect_image` through the engine library on the API socket
// against the client's `image inspect` (the fallback, and what the probe was for podman before
// its API service was used), with p50/p95 wall time of each. Figures are printed, never asserted.
// Usage: sandshim_probe_bench [ITERATIONS] [IMAGE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine.hpp"
#include "engine/engine_api.hpp"
#include "engine/image_probe.hpp"
#include "policy/policy.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// p50 and p95 over `iterations`, in microseconds; `action` says whether it got an id.
std::pair<double, double> percentiles_us(int iterations, const std::function<bool()>& action) {
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    if (!action()) {
      std::fprintf(stderr, "probe_bench: no id\n");
      std::exit(1);
    }
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times[times.size() * 95 / 100]};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sandshim::shim;
  int iterations = argc > 1 ? std::atoi(argv[1]) : 100;
  std::string image = argc > 2 ? argv[2] : "sandshim/sh:bookworm";
  Policy policy;
  Engine engine = locate_engine(policy);
  auto api = engine_api(engine, std::chrono::seconds(5));
  if (!api) {
    std::fprintf(stderr, "probe_bench: the engine has no local API socket\n");
    return 1;
  }
  const auto* socket = std::get_if<std::filesystem::path>(&api->transport());
  if (socket == nullptr) {
    std::fprintf(stderr, "probe_bench: the engine is remote; this bench times a local socket\n");
    return 1;
  }
  Engine client_only = engine;
  client_only.endpoint = "tcp://probe-bench.invalid:2376";  // no TLS, no API: the client
  client_only.env.push_back("DOCKER_HOST=unix://" + socket->string());
  auto [api_p50, api_p95] = percentiles_us(
      iterations, [&] { return !sandshim::engine::image_id(api->inspect_image(image)).empty(); });
  auto [cli_p50, cli_p95] = percentiles_us(
      iterations, [&] { return !ImageProbe(client_only, image).result(10000).empty(); });
  std::printf("image probe of %s, %d iterations (wall time per probe)\n", image.c_str(),
              iterations);
  std::printf("  engine API (inspect_image):  p50 %8.0f us  p95 %8.0f us\n", api_p50, api_p95);
  std::printf("  client `image inspect`:      p50 %8.0f us  p95 %8.0f us\n", cli_p50, cli_p95);
  return 0;
}
