#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/run_record.hpp"
#include "audit/store.hpp"
#include "engine/engine.hpp"
#include "policy/limit_hints.hpp"
#include "policy/policy.hpp"
#include "run/container_run.hpp"
#include "run/run_request.hpp"
#include "run/run_spec.hpp"

namespace sandshim::shim {

// The one owner of a run, from its request to its outcome: policy, spec, engine, audit store and
// result. The audit row is never kept as state: row_at_begin and row_at_completion derive it.
class RunContext {
 public:
  // A run of `request`, started now under a fresh run id; `request` must outlive it.
  explicit RunContext(const RunRequest& request);
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  const RunRequest& request() const { return m_request; }
  // The current attempt's id: a claimed warm container's, else the run's own.
  const std::string& run_id() const { return m_spec ? m_spec->run_id : m_cold_run_id; }
  // The run's own id, which a cold attempt runs under.
  const std::string& cold_run_id() const { return m_cold_run_id; }
  int64_t start_ms() const { return m_start_ms; }
  int64_t end_ms() const { return m_end_ms; }

  Policy policy;
  std::filesystem::path cwd;        // known once read from the request
  std::filesystem::path workspace;  // known once resolved
  std::optional<Engine> engine;
  std::string enforcement;               // what the engine enforces, after the policy's limits
  std::unique_ptr<audit::Store> store;   // null: the run is not recorded
  std::vector<std::string> create_args;  // warm: how the claimed container was started
  EngineCall call;                       // what the engine is given for this attempt
  std::vector<LimitHint> hints;          // the limits the last attempt hit, said after its output

  const std::optional<RunSpec>& spec() const { return m_spec; }
  // The spec is set once the checks passed; from then on the run id lives in it.
  void set_spec(RunSpec spec);
  // Whether the engine arguments are known, so the row can describe the container.
  bool described() const { return m_spec.has_value() && engine.has_value() && !call.args.empty(); }

  // This attempt takes over a claimed warm container: its id and image, its launcher (or an exec)
  // instead of a run.
  void take_warm(const PoolClaim& claim);
  // The warm attempt failed before anything ran: the run goes on cold, under its own id, from now.
  void go_cold();

  const std::optional<ContainerResult>& result() const { return m_result; }
  // The attempt ended (or was refused) with `result`, now.
  void finish(ContainerResult result);
  // Appends to the outcome's message (the warm attempt's row names the cold run).
  void annotate(const std::string& note);

 private:
  const RunRequest& m_request;
  std::string m_cold_run_id;
  int64_t m_start_ms;
  int64_t m_end_ms = 0;
  std::optional<RunSpec> m_spec;
  std::optional<ContainerResult> m_result;
};

// A cold attempt: the container's spec, and the client's arguments that serialize it.
EngineCall cold_call(const Policy& policy, const RunSpec& spec);

// The run's row as begin_run inserts it: status running, everything known before the start.
audit::RunRecord row_at_begin(const RunContext& run);

// The row with its outcome, for complete_run (a started run) or record_finished (a refusal).
audit::RunRecord row_at_completion(const RunContext& run);

// A refusal's outcome: nothing ran; exit 125 and one line.
ContainerResult refused_result(audit::RunStatus status, const std::string& message);

}  // namespace sandshim::shim
