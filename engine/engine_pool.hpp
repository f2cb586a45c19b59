#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/placement.hpp"

namespace sandshim::shim {

// A failed ping keeps an engine of engine.endpoints out of placement this long; then the next
// run to choose it pings it again.
inline constexpr int64_t k_engine_retry_ms = 10'000;
inline constexpr std::chrono::milliseconds k_engine_ping_timeout{2000};

// Why the engine does not answer its API's ping (over ssh for ssh://), nullopt when it does (or
// when only its client reaches it, podman's remote endpoints: the run itself finds out).
std::optional<std::string> ping_engine(const Engine& engine);

using EnginePing = std::function<std::optional<std::string>(const Engine&)>;

// The engine a run goes to. With engine.endpoints: among the engines carrying every label of
// engine.require_labels, the least loaded by share of its cap (max_runs=, else engine.max_runs)
// that answers `ping`, with its entry's client and dialect (engine=), its slot held while the
// returned Engine (or a copy) lives; a run waits up to engine.place_wait for a free one. Else
// the one engine.endpoint names. Throws Fatal with one line when no engine carries the labels,
// none answers, or all stay full.
Engine place_engine(const Policy& policy, const EnginePing& ping = ping_engine,
                    const std::filesystem::path& root = {});

// Every engine of engine.endpoints, pinged now. Read-only: no slot is taken and no engine is
// marked down (placement keeps its own view).
std::vector<engine::EngineHealth> survey_engines(const Policy& policy,
                                                 const EnginePing& ping = ping_engine,
                                                 const std::filesystem::path& root = {});

// How many of them answer their ping.
int64_t answering(const std::vector<engine::EngineHealth>& engines);

// How many of the engines answer, each with its entry's options, its load or why not, against
// engine.max_runs = `max_runs` (0: no cap): "2 of 3 answer (engine.max_runs = 4): unix:///… 1 in
// flight; tcp://… (max_runs=2 label=gpu) does not answer: …".
std::string engines_line(const std::vector<engine::EngineHealth>& engines, int64_t max_runs);

}  // namespace sandshim::shim
